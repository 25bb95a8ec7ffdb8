package main

import (
	"fmt"
	"math"
	"strings"

	"github.com/dustin/go-humanize"
)

// parseBytes reads a size as people type it, with github.com/dustin/go-humanize:
// "32MiB", "32 MiB", "32mib" (binary: 32 × 2^20), "32MB", "32mb", "32 M"
// (decimal: 32 × 10^6), "1.5GiB", "1,048,576" or "1048576" (bytes). Units
// are case-insensitive; a unit with an "i" is a power of 1024, one without
// a power of 1000. The size must be positive and fit in an int64.
func parseBytes(s string) (int64, error) {
	if t := strings.TrimSpace(s); t == "" || t[0] < '0' || t[0] > '9' {
		return 0, fmt.Errorf("invalid size %s (want a number of bytes, or a number with a unit: 32MiB, 32 MiB, 32MB)", quote(s))
	}
	n, err := humanize.ParseBytes(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("invalid size %s (want a number of bytes, or a number with a unit: 32MiB, 32 MiB, 32MB)", quote(s))
	}
	if n > math.MaxInt64 {
		return 0, fmt.Errorf("size %s is too large", quote(s))
	}
	if n == 0 {
		return 0, fmt.Errorf("size %s must be positive", quote(s))
	}
	return int64(n), nil
}
