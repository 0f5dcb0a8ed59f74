// SPDX-License-Identifier: MIT
/*
 * decode_tiny: a workload for the decode and golden tests that needs no C
 * library, no dynamic loader and no compiler code generation, so that its
 * code, addresses and trace are the same wherever it is built:
 *
 *   cc -static -nostdlib -no-pie -o decode_tiny decode_tiny.c
 *   decode_tiny [N]      (N iterations, default 3)
 *
 * Each iteration calls outer(i), which makes a direct call (leaf), an
 * indirect call through a table (one of four functions, one of them a loop
 * and one calling on), a recursion four deep (rec) and a tail call (tail
 * jumps to leaf); then the loop makes a getpid system call. The program ends
 * with exit_group(0).
 */

__asm__(
	"	.text\n"
	"	.globl _start\n"
	"	.type _start, @function\n"
	"_start:\n"
	"	mov (%rsp), %rcx\n"		/* argc */
	"	mov $3, %r12d\n"
	"	cmp $2, %rcx\n"
	"	jl 2f\n"
	"	mov 16(%rsp), %rsi\n"		/* argv[1], decimal */
	"	xor %r12d, %r12d\n"
	"1:	movzbl (%rsi), %eax\n"
	"	sub $48, %eax\n"
	"	cmp $9, %eax\n"
	"	ja 2f\n"
	"	imul $10, %r12, %r12\n"
	"	add %rax, %r12\n"
	"	inc %rsi\n"
	"	jmp 1b\n"
	"2:	and $-16, %rsp\n"
	"	xor %ebx, %ebx\n"
	"3:	mov %rbx, %rdi\n"
	"	call outer\n"
	"	mov $39, %eax\n"		/* getpid */
	"	syscall\n"
	"	inc %rbx\n"
	"	cmp %r12, %rbx\n"
	"	jb 3b\n"
	"	xor %edi, %edi\n"
	"	mov $231, %eax\n"		/* exit_group */
	"	syscall\n"
	"	hlt\n"
	"	.size _start, .-_start\n"

	"	.type outer, @function\n"
	"outer:\n"
	"	push %rbx\n"
	"	mov %rdi, %rbx\n"
	"	call leaf\n"
	"	mov %rbx, %rdi\n"
	"	and $3, %edi\n"
	"	call *table(,%rdi,8)\n"
	"	mov $4, %edi\n"
	"	call rec\n"
	"	mov %rbx, %rdi\n"
	"	call tail\n"
	"	pop %rbx\n"
	"	ret\n"
	"	.size outer, .-outer\n"

	"	.type leaf, @function\n"
	"leaf:\n"
	"	lea 1(%rdi,%rdi,2), %rax\n"
	"	ret\n"
	"	.size leaf, .-leaf\n"

	"	.type rec, @function\n"
	"rec:\n"
	"	test %rdi, %rdi\n"
	"	jz 1f\n"
	"	dec %rdi\n"
	"	call rec\n"
	"	inc %rax\n"
	"	ret\n"
	"1:	xor %eax, %eax\n"
	"	ret\n"
	"	.size rec, .-rec\n"

	"	.type tail, @function\n"
	"tail:\n"
	"	add $1, %rdi\n"
	"	jmp leaf\n"
	"	.size tail, .-tail\n"

	"	.type ind_call, @function\n"
	"ind_call:\n"
	"	call leaf\n"
	"	ret\n"
	"	.size ind_call, .-ind_call\n"

	"	.type ind_loop, @function\n"
	"ind_loop:\n"
	"	mov $3, %ecx\n"
	"1:	dec %ecx\n"
	"	jnz 1b\n"
	"	ret\n"
	"	.size ind_loop, .-ind_loop\n"

	"	.type ind_even, @function\n"
	"ind_even:\n"
	"	test $1, %edi\n"
	"	jnz 1f\n"
	"	xor %eax, %eax\n"
	"1:	ret\n"
	"	.size ind_even, .-ind_even\n"

	"	.type ind_ret, @function\n"
	"ind_ret:\n"
	"	ret\n"
	"	.size ind_ret, .-ind_ret\n"

	"	.section .rodata\n"
	"	.balign 8\n"
	"table:\n"
	"	.quad ind_call, ind_loop, ind_even, ind_ret\n"
	"	.section .note.GNU-stack,\"\",@progbits\n");
