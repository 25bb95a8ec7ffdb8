;; kernel_bomb allocates 1 MiB kernel blocks until the kernel cannot grow
;; its memory (alloc returns 0), then reports the failure with error_set
;; (the way an Extism PDK reports an allocation failure).
(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "error_set" (func $error_set (param i64)))
  (func (export "run") (result i32)
    (loop $more
      (br_if $more (i64.ne (call $alloc (i64.const 1048576)) (i64.const 0))))
    (call $error_set (call $alloc (i64.const 1)))
    (i32.const 1)))
