;; internals_probe is the module New runs to check, before parked mode is
;; used, that wazero's internals have the shapes wazero_internals.go reads:
;; a snapshot taken in a host call, one mutable global, one table.
(module
  (import "sandbank" "snapshot" (func $snapshot))
  (global $g (mut i32) (i32.const 0))
  (table 1 funcref)
  (elem (i32.const 0) $run)
  (func $run (export "run")
    (global.set $g (i32.const 7))
    (call $snapshot)))
