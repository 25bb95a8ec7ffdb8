;; reshape: the WebAssembly (Extism plugin) translation of the shared
;; benchmark ../shared/bench/reshape.js, with the same output. It builds
;; 10,000 rows {id, group: id % 17, v: id * 1.5} in its linear memory,
;; groups them by group (count, sum, in row order, as f64 like JavaScript),
;; computes each group's mean, sorts the groups by sum descending then by
;; group ascending, and writes
;;   {"n":10000,"groups":17,"top":{...},"result":[{...},...]}
;; as JSON text to the Extism output. The input is ignored.
;;
;; Numbers are written by $write_f64: an integral value as an integer,
;; otherwise the integer part, a point, and the exact decimal expansion of
;; the binary fraction (at most 17 digits). That is JavaScript's shortest
;; form for the short binary fractions this workload produces (every sum
;; and mean is a multiple of 0.25); it is not a general float formatter.
;;
;; Rebuild reshape.wasm with `go generate ./bench/workloads` (wat2wasm,
;; Debian package wabt); a test fails when the two drift.
(module
  (import "extism:host/env" "alloc" (func $alloc (param i64) (result i64)))
  (import "extism:host/env" "store_u8" (func $store_u8 (param i64 i32)))
  (import "extism:host/env" "store_u64" (func $store_u64 (param i64 i64)))
  (import "extism:host/env" "output_set" (func $output_set (param i64 i64)))

  (memory 8)

  ;; Fixed JSON fragments, 16 bytes apart.
  (data (i32.const 0) "{\"n\":")         ;; 5
  (data (i32.const 16) ",\"groups\":")   ;; 10
  (data (i32.const 32) ",\"top\":")      ;; 7
  (data (i32.const 48) ",\"result\":[")  ;; 11
  (data (i32.const 64) "]}")             ;; 2
  (data (i32.const 80) "{\"group\":")    ;; 9
  (data (i32.const 96) ",\"count\":")    ;; 9
  (data (i32.const 112) ",\"sum\":")     ;; 7
  (data (i32.const 128) ",\"mean\":")    ;; 8

  (global $N i32 (i32.const 10000))
  ;; Group records (i32 group, i32 count, f64 sum; 16 bytes), at most 64.
  (global $GROUPS i32 (i32.const 1024))
  (global $MAXGROUPS i32 (i32.const 64))
  ;; The sorted order: i32 indexes into the group records.
  (global $ORDER i32 (i32.const 2048))
  ;; Digits scratch (reversed integer digits).
  (global $DIGITS i32 (i32.const 2560))
  ;; Rows (i32 id, i32 group, f64 v; 16 bytes each).
  (global $ROWS i32 (i32.const 65536))
  ;; The JSON text being written.
  (global $OUT i32 (i32.const 262144))
  (global $pos (mut i32) (i32.const 0))
  (global $ngroups (mut i32) (i32.const 0))

  (func $put (param $b i32)
    (i32.store8 (i32.add (global.get $OUT) (global.get $pos)) (local.get $b))
    (global.set $pos (i32.add (global.get $pos) (i32.const 1))))

  (func $put_str (param $ptr i32) (param $len i32)
    (local $i i32)
    (block $done
      (loop $each
        (br_if $done (i32.ge_u (local.get $i) (local.get $len)))
        (call $put (i32.load8_u (i32.add (local.get $ptr) (local.get $i))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $each))))

  ;; write_u64 writes a non-negative integer in decimal.
  (func $write_u64 (param $v i64)
    (local $n i32)
    (loop $digits
      (i32.store8 (i32.add (global.get $DIGITS) (local.get $n))
        (i32.add (i32.const 48) (i32.wrap_i64 (i64.rem_u (local.get $v) (i64.const 10)))))
      (local.set $n (i32.add (local.get $n) (i32.const 1)))
      (local.set $v (i64.div_u (local.get $v) (i64.const 10)))
      (br_if $digits (i64.ne (local.get $v) (i64.const 0))))
    (loop $out
      (local.set $n (i32.sub (local.get $n) (i32.const 1)))
      (call $put (i32.load8_u (i32.add (global.get $DIGITS) (local.get $n))))
      (br_if $out (i32.gt_s (local.get $n) (i32.const 0)))))

  ;; write_f64 writes a finite number below 2^53 in magnitude (see the
  ;; file comment).
  (func $write_f64 (param $x f64)
    (local $ip f64) (local $frac f64) (local $d f64) (local $k i32)
    (if (f64.lt (local.get $x) (f64.const 0))
      (then
        (call $put (i32.const 45)) ;; '-'
        (local.set $x (f64.neg (local.get $x)))))
    (local.set $ip (f64.floor (local.get $x)))
    (call $write_u64 (i64.trunc_f64_u (local.get $ip)))
    (local.set $frac (f64.sub (local.get $x) (local.get $ip)))
    (if (f64.ne (local.get $frac) (f64.const 0))
      (then
        (call $put (i32.const 46)) ;; '.'
        (block $done
          (loop $digits
            (br_if $done (f64.eq (local.get $frac) (f64.const 0)))
            (br_if $done (i32.ge_u (local.get $k) (i32.const 17)))
            (local.set $frac (f64.mul (local.get $frac) (f64.const 10)))
            (local.set $d (f64.floor (local.get $frac)))
            (call $put (i32.add (i32.const 48) (i32.trunc_f64_u (local.get $d))))
            (local.set $frac (f64.sub (local.get $frac) (local.get $d)))
            (local.set $k (i32.add (local.get $k) (i32.const 1)))
            (br $digits))))))

  ;; group_rec returns the address of group record i.
  (func $group_rec (param $i i32) (result i32)
    (i32.add (global.get $GROUPS) (i32.shl (local.get $i) (i32.const 4))))

  ;; find_group returns the record of group g, adding an empty one when it
  ;; is new (in first-seen order).
  (func $find_group (param $g i32) (result i32)
    (local $i i32) (local $rec i32)
    (block $notfound
      (loop $each
        (br_if $notfound (i32.ge_u (local.get $i) (global.get $ngroups)))
        (local.set $rec (call $group_rec (local.get $i)))
        (if (i32.eq (i32.load (local.get $rec)) (local.get $g))
          (then (return (local.get $rec))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $each)))
    (if (i32.ge_u (global.get $ngroups) (global.get $MAXGROUPS)) (then unreachable))
    (local.set $rec (call $group_rec (global.get $ngroups)))
    (i32.store (local.get $rec) (local.get $g))
    (i32.store offset=4 (local.get $rec) (i32.const 0))
    (f64.store offset=8 (local.get $rec) (f64.const 0))
    (global.set $ngroups (i32.add (global.get $ngroups) (i32.const 1)))
    (local.get $rec))

  ;; before reports whether record a sorts before record b: larger sum
  ;; first, then smaller group.
  (func $before (param $a i32) (param $b i32) (result i32)
    (local $sa f64) (local $sb f64)
    (local.set $sa (f64.load offset=8 (local.get $a)))
    (local.set $sb (f64.load offset=8 (local.get $b)))
    (if (f64.ne (local.get $sa) (local.get $sb))
      (then (return (f64.gt (local.get $sa) (local.get $sb)))))
    (i32.lt_s (i32.load (local.get $a)) (i32.load (local.get $b))))

  ;; write_group writes record rec as {"group","count","sum","mean"}.
  (func $write_group (param $rec i32)
    (local $sum f64) (local $count i32)
    (local.set $count (i32.load offset=4 (local.get $rec)))
    (local.set $sum (f64.load offset=8 (local.get $rec)))
    (call $put_str (i32.const 80) (i32.const 9))
    (call $write_f64 (f64.convert_i32_s (i32.load (local.get $rec))))
    (call $put_str (i32.const 96) (i32.const 9))
    (call $write_u64 (i64.extend_i32_u (local.get $count)))
    (call $put_str (i32.const 112) (i32.const 7))
    (call $write_f64 (local.get $sum))
    (call $put_str (i32.const 128) (i32.const 8))
    (call $write_f64 (f64.div (local.get $sum) (f64.convert_i32_u (local.get $count))))
    (call $put (i32.const 125))) ;; '}'

  ;; order_at returns the record at position i of the sorted order.
  (func $order_at (param $i i32) (result i32)
    (call $group_rec (i32.load (i32.add (global.get $ORDER) (i32.shl (local.get $i) (i32.const 2))))))

  (func (export "run") (result i32)
    (local $id i32) (local $row i32) (local $rec i32)
    (local $i i32) (local $j i32) (local $cur i32)
    (local $off i64) (local $k i32)

    ;; 1. The rows.
    (block $done
      (loop $make
        (br_if $done (i32.ge_u (local.get $id) (global.get $N)))
        (local.set $row (i32.add (global.get $ROWS) (i32.shl (local.get $id) (i32.const 4))))
        (i32.store (local.get $row) (local.get $id))
        (i32.store offset=4 (local.get $row) (i32.rem_u (local.get $id) (i32.const 17)))
        (f64.store offset=8 (local.get $row)
          (f64.mul (f64.convert_i32_u (local.get $id)) (f64.const 1.5)))
        (local.set $id (i32.add (local.get $id) (i32.const 1)))
        (br $make)))

    ;; 2. Group: count and sum per group, in row order.
    (local.set $id (i32.const 0))
    (block $done
      (loop $group
        (br_if $done (i32.ge_u (local.get $id) (global.get $N)))
        (local.set $row (i32.add (global.get $ROWS) (i32.shl (local.get $id) (i32.const 4))))
        (local.set $rec (call $find_group (i32.load offset=4 (local.get $row))))
        (i32.store offset=4 (local.get $rec)
          (i32.add (i32.load offset=4 (local.get $rec)) (i32.const 1)))
        (f64.store offset=8 (local.get $rec)
          (f64.add (f64.load offset=8 (local.get $rec)) (f64.load offset=8 (local.get $row))))
        (local.set $id (i32.add (local.get $id) (i32.const 1)))
        (br $group)))

    ;; 3. Sort the record indexes (insertion sort).
    (local.set $i (i32.const 0))
    (block $done
      (loop $sort
        (br_if $done (i32.ge_u (local.get $i) (global.get $ngroups)))
        (local.set $j (local.get $i))
        (block $placed
          (loop $shift
            (br_if $placed (i32.eqz (local.get $j)))
            (br_if $placed
              (i32.eqz (call $before
                (call $group_rec (local.get $i))
                (call $order_at (i32.sub (local.get $j) (i32.const 1))))))
            (i32.store (i32.add (global.get $ORDER) (i32.shl (local.get $j) (i32.const 2)))
              (i32.load (i32.add (global.get $ORDER)
                (i32.shl (i32.sub (local.get $j) (i32.const 1)) (i32.const 2)))))
            (local.set $j (i32.sub (local.get $j) (i32.const 1)))
            (br $shift)))
        (i32.store (i32.add (global.get $ORDER) (i32.shl (local.get $j) (i32.const 2))) (local.get $i))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $sort)))

    ;; 4. The JSON text.
    (call $put_str (i32.const 0) (i32.const 5))
    (call $write_u64 (i64.extend_i32_u (global.get $N)))
    (call $put_str (i32.const 16) (i32.const 10))
    (call $write_u64 (i64.extend_i32_u (global.get $ngroups)))
    (call $put_str (i32.const 32) (i32.const 7))
    (call $write_group (call $order_at (i32.const 0)))
    (call $put_str (i32.const 48) (i32.const 11))
    (local.set $i (i32.const 0))
    (block $done
      (loop $each
        (br_if $done (i32.ge_u (local.get $i) (global.get $ngroups)))
        (if (local.get $i) (then (call $put (i32.const 44)))) ;; ','
        (call $write_group (call $order_at (local.get $i)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $each)))
    (call $put_str (i32.const 64) (i32.const 2))

    ;; 5. Copy it to a kernel block and make it the output.
    (local.set $off (call $alloc (i64.extend_i32_u (global.get $pos))))
    (if (i64.eqz (local.get $off)) (then unreachable))
    (block $done
      (loop $words
        (br_if $done (i32.gt_u (i32.add (local.get $k) (i32.const 8)) (global.get $pos)))
        (call $store_u64 (i64.add (local.get $off) (i64.extend_i32_u (local.get $k)))
          (i64.load (i32.add (global.get $OUT) (local.get $k))))
        (local.set $k (i32.add (local.get $k) (i32.const 8)))
        (br $words)))
    (block $done
      (loop $bytes
        (br_if $done (i32.ge_u (local.get $k) (global.get $pos)))
        (call $store_u8 (i64.add (local.get $off) (i64.extend_i32_u (local.get $k)))
          (i32.load8_u (i32.add (global.get $OUT) (local.get $k))))
        (local.set $k (i32.add (local.get $k) (i32.const 1)))
        (br $bytes)))
    (call $output_set (local.get $off) (i64.extend_i32_u (global.get $pos)))
    (i32.const 0))
)
