;; count_loop counts to 300,000,000 without allocating, then returns the
;; JSON text 1. It finishes on its own, so a test can see whether a
;; cancelled context stopped it.
(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (func (export "run") (result i32)
    (local $i i32) (local $off i64)
    (loop $count
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br_if $count (i32.lt_u (local.get $i) (i32.const 300000000))))
    (local.set $off (call $alloc (i64.const 1)))
    (call $store_u8 (local.get $off) (i32.const 49))
    (call $output_set (local.get $off) (i64.const 1))
    (i32.const 0)))
