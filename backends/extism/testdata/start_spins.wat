;; start_spins loops forever in its start function, which runs while the
;; module is instantiated, before any export is called (issue 14).
(module
  (func $spin (loop $l (br $l)))
  (start $spin)
  (func (export "run") (result i32) (i32.const 0)))
