;; stack: the stack pass's test module, shaped like LLVM's output for
;; wasm32. Rebuild with go generate (wat2wasm --debug-names keeps the
;; global's name, which the pass looks for).
(module
  (import "env" "tick" (func $tick))
  (memory (export "memory") 2)
  (table 1 funcref)
  (elem (i32.const 0) $recurse)
  ;; The stack as wasm-ld lays it out: below the static data's end at
  ;; 64 KiB; the heap would follow.
  (global $__stack_pointer (mut i32) (i32.const 65536))
  (data (i32.const 1024) "static data the stack must never reach")

  ;; recurse moves the stack pointer down by a 64-byte frame, stores n at
  ;; its bottom and calls itself (through the table every other level)
  ;; until n is 0; it returns the sum of the n it read back from the
  ;; frames, so a frame that was overwritten gives a wrong sum.
  (func $recurse (export "recurse") (param $n i32) (result i32)
    (local $fp i32) (local $r i32)
    global.get $__stack_pointer
    i32.const 64
    i32.sub
    local.tee $fp
    global.set $__stack_pointer
    local.get $fp
    local.get $n
    i32.store
    (if (local.get $n)
      (then
        (if (i32.and (local.get $n) (i32.const 1))
          (then (local.set $r (call $recurse (i32.sub (local.get $n) (i32.const 1)))))
          (else (local.set $r (call_indirect (param i32) (result i32) (i32.sub (local.get $n) (i32.const 1)) (i32.const 0)))))))
    local.get $fp
    i32.load
    local.get $r
    i32.add
    local.get $fp
    i32.const 64
    i32.add
    global.set $__stack_pointer)

  ;; leaf uses a 32-byte red-zone frame without moving the stack pointer.
  (func $leaf (export "leaf") (param $x i32) (result i32)
    (local $fp i32)
    global.get $__stack_pointer
    i32.const 32
    i32.sub
    local.tee $fp
    local.get $x
    i32.store offset=28
    local.get $fp
    i32.load offset=28)

  ;; sp reads the stack pointer only to return it.
  (func $sp (export "sp") (result i32)
    global.get $__stack_pointer)

  ;; alloca moves the stack pointer by n bytes (aligned to 16), writes
  ;; the block's first word and moves it back, as C's alloca does.
  (func $alloca (export "alloca") (param $n i32) (result i32)
    (local $saved i32) (local $p i32)
    global.get $__stack_pointer
    local.set $saved
    global.get $__stack_pointer
    local.get $n
    i32.const 15
    i32.add
    i32.const -16
    i32.and
    i32.sub
    local.tee $p
    global.set $__stack_pointer
    local.get $p
    i32.const 7
    i32.store
    call $tick
    local.get $saved
    global.set $__stack_pointer
    local.get $p
    i32.load)
)
