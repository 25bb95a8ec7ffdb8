;; wasi_probe imports WASI file, environment and clock functions. With WASI
;; off it must not instantiate. With WASI on it reports what it got:
;; {"preopens":N,"environ":N,"clock":NS} (N preopened directories found by
;; fd_prestat_get from fd 3 up, N environment variables, the wall clock).
(module
  (import "wasi_snapshot_preview1" "fd_prestat_get" (func $fd_prestat_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "environ_sizes_get" (func $environ_sizes_get (param i32 i32) (result i32)))
  (import "wasi_snapshot_preview1" "clock_time_get" (func $clock_time_get (param i32 i64 i32) (result i32)))
  (import "wasi_snapshot_preview1" "path_open"
    (func $path_open (param i32 i32 i32 i32 i32 i64 i64 i32 i32) (result i32)))
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))
  (memory 1)
  (data (i32.const 0) "{\"preopens\":")
  (data (i32.const 16) ",\"environ\":")
  (data (i32.const 32) ",\"clock\":")
  (data (i32.const 48) "/etc/passwd")

  (func $itoa (param $dst i32) (param $v i64) (result i32)
    (local $n i32) (local $t i64) (local $p i32)
    (local.set $n (i32.const 1))
    (local.set $t (local.get $v))
    (block $counted
      (loop $count
        (br_if $counted (i64.lt_u (local.get $t) (i64.const 10)))
        (local.set $t (i64.div_u (local.get $t) (i64.const 10)))
        (local.set $n (i32.add (local.get $n) (i32.const 1)))
        (br $count)))
    (local.set $p (i32.add (local.get $dst) (local.get $n)))
    (loop $digit
      (local.set $p (i32.sub (local.get $p) (i32.const 1)))
      (i32.store8 (local.get $p)
        (i32.add (i32.const 48) (i32.wrap_i64 (i64.rem_u (local.get $v) (i64.const 10)))))
      (local.set $v (i64.div_u (local.get $v) (i64.const 10)))
      (br_if $digit (i32.gt_u (local.get $p) (local.get $dst))))
    (local.get $n))

  (func $put (param $w i32) (param $src i32) (param $n i32) (result i32)
    (memory.copy (local.get $w) (local.get $src) (local.get $n))
    (i32.add (local.get $w) (local.get $n)))

  (func (export "run") (result i32)
    (local $fd i32) (local $w i32) (local $off i64) (local $i i32)
    ;; count preopened directories
    (local.set $fd (i32.const 3))
    (block $done
      (loop $next
        (br_if $done (i32.ne (call $fd_prestat_get (local.get $fd) (i32.const 256)) (i32.const 0)))
        (local.set $fd (i32.add (local.get $fd) (i32.const 1)))
        (br $next)))
    ;; try to open a host file relative to fd 3 (no preopen: must fail)
    (drop (call $path_open (i32.const 3) (i32.const 0) (i32.const 48) (i32.const 11)
      (i32.const 0) (i64.const 2) (i64.const 0) (i32.const 0) (i32.const 264)))
    (drop (call $environ_sizes_get (i32.const 272) (i32.const 276)))
    (drop (call $clock_time_get (i32.const 0) (i64.const 1) (i32.const 280)))
    (local.set $w (i32.const 1024))
    (local.set $w (call $put (local.get $w) (i32.const 0) (i32.const 12)))
    (local.set $w (i32.add (local.get $w)
      (call $itoa (local.get $w) (i64.extend_i32_u (i32.sub (local.get $fd) (i32.const 3))))))
    (local.set $w (call $put (local.get $w) (i32.const 16) (i32.const 11)))
    (local.set $w (i32.add (local.get $w) (call $itoa (local.get $w) (i64.load32_u (i32.const 272)))))
    (local.set $w (call $put (local.get $w) (i32.const 32) (i32.const 9)))
    (local.set $w (i32.add (local.get $w) (call $itoa (local.get $w) (i64.load (i32.const 280)))))
    (i32.store8 (local.get $w) (i32.const 125))
    (local.set $w (i32.add (local.get $w) (i32.const 1)))
    ;; copy [1024, w) to a kernel block and set it as the output
    (local.set $off (call $alloc (i64.extend_i32_u (i32.sub (local.get $w) (i32.const 1024)))))
    (local.set $i (i32.const 1024))
    (block $copied
      (loop $copy
        (br_if $copied (i32.ge_u (local.get $i) (local.get $w)))
        (call $store_u8 (i64.add (local.get $off) (i64.extend_i32_u (i32.sub (local.get $i) (i32.const 1024))))
          (i32.load8_u (local.get $i)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $copy)))
    (call $output_set (local.get $off) (i64.extend_i32_u (i32.sub (local.get $w) (i32.const 1024))))
    (i32.const 0)))
