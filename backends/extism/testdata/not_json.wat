;; not_json sets the output to text that is not JSON.
(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (func (export "run") (result i32)
    (local $off i64)
    (local.set $off (call $alloc (i64.const 3)))
    (call $store_u8 (local.get $off) (i32.const 110))
    (call $store_u8 (i64.add (local.get $off) (i64.const 1)) (i32.const 111))
    (call $store_u8 (i64.add (local.get $off) (i64.const 2)) (i32.const 33))
    (call $output_set (local.get $off) (i64.const 3))
    (i32.const 0)))
