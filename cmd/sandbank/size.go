package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// byteUnits are the size suffixes --memory accepts, longest first so that
// "MiB" is tried before "B".
var byteUnits = []struct {
	suffix string
	factor int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"B", 1},
}

// parseBytes reads a size such as "32MiB", "1GB", "512KiB" or "1048576"
// (bytes). Binary suffixes (KiB, MiB, GiB, TiB) are powers of 1024, decimal
// ones (KB, MB, GB, TB) powers of 1000. The number is a non-negative
// integer; the size must be positive and fit in an int64.
func parseBytes(s string) (int64, error) {
	num, factor := s, int64(1)
	for _, u := range byteUnits {
		if strings.HasSuffix(s, u.suffix) {
			num, factor = strings.TrimSuffix(s, u.suffix), u.factor
			break
		}
	}
	num = strings.TrimSpace(num)
	if num == "" || strings.IndexFunc(num, func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
		return 0, fmt.Errorf("invalid size %q (want bytes, or a whole number with KiB, MiB, GiB, KB, MB or GB)", s)
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n > math.MaxInt64/factor {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	if n == 0 {
		return 0, fmt.Errorf("size %q must be positive", s)
	}
	return n * factor, nil
}
