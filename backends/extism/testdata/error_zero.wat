;; error_zero sets an error ("soft failure") but returns 0.
(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "error_set" (func $error_set (param i64)))
  (memory 1)
  (data (i32.const 0) "soft failure")
  (func (export "run") (result i32)
    (local $off i64) (local $i i32)
    (local.set $off (call $alloc (i64.const 12)))
    (loop $copy
      (call $store_u8 (i64.add (local.get $off) (i64.extend_i32_u (local.get $i))) (i32.load8_u (local.get $i)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $copy (i32.lt_u (local.get $i) (i32.const 12))))
    (call $error_set (local.get $off))
    (i32.const 0)))
