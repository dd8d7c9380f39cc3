;; read_mount.wat: opens the path given as input (a JSON string without
;; escapes, e.g. "file.txt") inside the first mount (preopened fd 3) and
;; reads up to 64 bytes. Output: one byte, the WASI
;; errno of path_open or fd_read (0 = read), then the bytes read.
(module
  (import "wasi_snapshot_preview1" "path_open" (func $path_open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "extism:host/env" "input_length" (func $input_length (result i64)))
  (import "extism:host/env" "input_load_u8" (func $input_load_u8 (param i64) (result i32)))
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  ;; memory: 0..255 the path, 256 the opened fd, 264 the iovec {512, 64},
  ;; 272 the count read, 512..575 the bytes read
  (memory (export "memory") 1)
  (func (export "read") (result i32)
    (local $n i64) (local $i i64) (local $errno i32) (local $len i32) (local $j i32) (local $out i64)
    ;; the path is the input without its first and last byte (the quotes)
    (local.set $n (i64.sub (call $input_length) (i64.const 2)))
    (block $copied (loop $copy
      (br_if $copied (i64.ge_s (local.get $i) (local.get $n)))
      (br_if $copied (i64.ge_u (local.get $i) (i64.const 255)))
      (i32.store8 (i32.wrap_i64 (local.get $i)) (call $input_load_u8 (i64.add (local.get $i) (i64.const 1))))
      (local.set $i (i64.add (local.get $i) (i64.const 1)))
      (br $copy)))
    ;; path_open(fd 3, no dirflags, path, len, no oflags, rights fd_read, none, no fdflags, &fd)
    (local.set $errno (call $path_open (i32.const 3) (i32.const 0) (i32.const 0) (i32.wrap_i64 (local.get $i))
      (i32.const 0) (i64.const 2) (i64.const 0) (i32.const 0) (i32.const 256)))
    (if (i32.eqz (local.get $errno)) (then
      (i32.store (i32.const 264) (i32.const 512))
      (i32.store (i32.const 268) (i32.const 64))
      (local.set $errno (call $fd_read (i32.load (i32.const 256)) (i32.const 264) (i32.const 1) (i32.const 272)))
      (if (i32.eqz (local.get $errno)) (then (local.set $len (i32.load (i32.const 272)))))))
    (local.set $out (call $alloc (i64.extend_i32_u (i32.add (local.get $len) (i32.const 1)))))
    (call $store_u8 (local.get $out) (local.get $errno))
    (block $written (loop $write
      (br_if $written (i32.ge_u (local.get $j) (local.get $len)))
      (call $store_u8 (i64.add (local.get $out) (i64.extend_i32_u (i32.add (local.get $j) (i32.const 1))))
        (i32.load8_u (i32.add (i32.const 512) (local.get $j))))
      (local.set $j (i32.add (local.get $j) (i32.const 1)))
      (br $write)))
    (call $output_set (local.get $out) (i64.extend_i32_u (i32.add (local.get $len) (i32.const 1))))
    (i32.const 0)))
