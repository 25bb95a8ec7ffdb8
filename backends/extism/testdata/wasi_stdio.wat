;; wasi_stdio writes "out one\nout two" to standard output (the last line
;; without a newline), "err line\n" to standard error, logs "logged" with
;; log_info between the two, and returns 1.
(module
  (import "wasi_snapshot_preview1" "fd_write" (func $fd_write (param i32 i32 i32 i32) (result i32)))
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (import "extism:host/env" "log_info" (func $log_info (param i64)))
  (memory 1)
  (data (i32.const 0) "out one\nout two")   ;; 15 bytes
  (data (i32.const 16) "err line\n")        ;; 9 bytes
  (data (i32.const 32) "logged")            ;; 6 bytes
  (data (i32.const 40) "1")

  (func $kernel (param $ptr i32) (param $len i32) (result i64)
    (local $off i64) (local $i i32)
    (local.set $off (call $alloc (i64.extend_i32_u (local.get $len))))
    (block $done
      (loop $bytes
        (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
        (call $store_u8 (i64.add (local.get $off) (i64.extend_i32_u (local.get $i)))
          (i32.load8_u (i32.add (local.get $ptr) (local.get $i))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $bytes)))
    (local.get $off))

  ;; write writes [ptr, ptr+len) to fd through an iovec at 64.
  (func $write (param $fd i32) (param $ptr i32) (param $len i32)
    (i32.store (i32.const 64) (local.get $ptr))
    (i32.store (i32.const 68) (local.get $len))
    (drop (call $fd_write (local.get $fd) (i32.const 64) (i32.const 1) (i32.const 72))))

  (func (export "run") (result i32)
    (call $write (i32.const 1) (i32.const 0) (i32.const 8))   ;; "out one\n"
    (call $log_info (call $kernel (i32.const 32) (i32.const 6)))
    (call $write (i32.const 2) (i32.const 16) (i32.const 9))
    (call $write (i32.const 1) (i32.const 8) (i32.const 7))   ;; "out two", no newline
    (call $output_set (call $kernel (i32.const 40) (i32.const 1)) (i64.const 1))
    (i32.const 0))
)
