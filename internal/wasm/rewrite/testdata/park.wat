;; park is the test module of the park-read and export-globals passes
;; (go generate ./internal/wasm/rewrite/ rebuilds park.wasm from it):
;; fd_read called directly and through the table, mutable globals of two
;; types beside an immutable one, and a host call (env.done) after a read,
;; for a host that parks the module inside fd_read.
(module
  (import "wasi_snapshot_preview1" "fd_read" (func $fd_read (param i32 i32 i32 i32) (result i32)))
  (import "env" "done" (func $done))
  (global $count (mut i32) (i32.const 5))
  (global $one i32 (i32.const 1))
  (global $wide (mut i64) (i64.const 9))
  (memory (export "memory") 1)
  (table 2 funcref)
  (elem (i32.const 0) $fd_read $read)
  (func $read (export "read") (param $fd i32) (result i32)
    (call $fd_read (local.get $fd) (i32.const 16) (i32.const 1) (i32.const 32)))
  (func (export "read_indirect") (param $fd i32) (result i32)
    (call_indirect (param i32 i32 i32 i32) (result i32)
      (local.get $fd) (i32.const 16) (i32.const 1) (i32.const 32) (i32.const 0)))
  (func $bump (export "bump")
    (global.set $count (i32.add (global.get $count) (global.get $one)))
    (global.set $wide (i64.add (global.get $wide) (i64.const 1))))
  (func (export "count") (result i32) (global.get $count))
  ;; serve reads, changes its state, and tells the host it is done.
  (func (export "serve") (result i32)
    (i32.store (i32.const 64) (call $read (i32.const 0)))
    (call $bump)
    (call $done)
    (global.get $count)))
