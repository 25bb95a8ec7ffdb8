;; guest: the preemption pass's test module. Rebuild with go generate
;; (wat2wasm --enable-all is not needed: bulk memory is in the default set).
(module
  (import "env" "tick" (func $tick))
  (memory (export "memory") 4)
  (table 2 funcref)
  (elem (i32.const 0) $spin $count)
  (global $g (mut i32) (i32.const 0))

  ;; spin loops forever.
  (func $spin (export "spin")
    (loop $l (br $l)))

  ;; count loops n times and returns n.
  (func $count (export "count") (param $n i32) (result i32)
    (local $i i32)
    (block $done
      (loop $l
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $l)))
    (local.get $i))

  ;; recurse calls itself n times.
  (func $recurse (export "recurse") (param $n i32) (result i32)
    (if (result i32) (i32.eqz (local.get $n))
      (then (i32.const 0))
      (else (i32.add (i32.const 1) (call $recurse (i32.sub (local.get $n) (i32.const 1)))))))

  ;; indirect calls count through the table.
  (func (export "indirect") (param $n i32) (result i32)
    (call_indirect (param i32) (result i32) (local.get $n) (i32.const 1)))

  (func (export "fill") (param i32 i32 i32)
    (memory.fill (local.get 0) (local.get 1) (local.get 2)))

  (func (export "copy") (param i32 i32 i32)
    (memory.copy (local.get 0) (local.get 1) (local.get 2)))

  (func (export "grow") (param i32) (result i32)
    (memory.grow (local.get 0)))

  ;; fill_forever fills all of memory again and again.
  (func (export "fill_forever")
    (loop $l
      (memory.fill (i32.const 0) (i32.const 7) (i32.shl (memory.size) (i32.const 16)))
      (br $l)))

  ;; checksum sums every byte of [0, n).
  (func (export "checksum") (param $n i32) (result i32)
    (local $i i32) (local $s i32)
    (block $done
      (loop $l
        (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
        (local.set $s (i32.add (i32.mul (local.get $s) (i32.const 31)) (i32.load8_u (local.get $i))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $l)))
    (local.get $s))

  (func (export "ticks") (call $tick))
)
