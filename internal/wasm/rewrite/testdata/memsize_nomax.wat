;; memsize_nomax: a memory without a maximum, for the memory-size pass's
;; tests. Rebuild with go generate.
(module
  (memory 2)
  (func (export "size") (result i32)
    (memory.size))
  (func (export "grow") (param $n i32) (result i32)
    (memory.grow (local.get $n))))
