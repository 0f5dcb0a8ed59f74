// SPDX-License-Identifier: MIT
/* The software tracer: a QEMU TCG plugin (placeholder until implemented). */
__attribute__((visibility("default"))) int qemu_plugin_version = 1;
