package tenant

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sandbank/sandbank/backends/python"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/pool"
)

func doc(t *testing.T, body string) *Set {
	t.Helper()
	s, err := Parse([]byte(body))
	require.NoError(t, err)
	return s
}

func TestAuthenticate(t *testing.T) {
	k1, d1, err := NewKey()
	require.NoError(t, err)
	k2, d2, err := NewKey()
	require.NoError(t, err)
	k3, _, err := NewKey()
	require.NoError(t, err)
	s := doc(t, fmt.Sprintf(`{"tenants":[{"name":"a","keys":[%q]},{"name":"b","keys":[%q]}]}`, d1, d2))

	a, ok := s.Authenticate(k1)
	require.True(t, ok)
	assert.Equal(t, "a", a.Name)
	b, ok := s.Authenticate(k2)
	require.True(t, ok)
	assert.Equal(t, "b", b.Name)
	for _, bad := range []string{k3, "", d1, strings.TrimPrefix(d1, "sha256:"), k1[:MinKeyLength-1], k1 + "x"} {
		_, ok := s.Authenticate(bad)
		assert.False(t, ok, "key %q", bad)
	}
}

func TestNewKey(t *testing.T) {
	k, d, err := NewKey()
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(k, "sbk_"))
	assert.Len(t, k, 4+43)
	assert.Equal(t, HashKey(k), d)
	assert.Regexp(t, `^sha256:[0-9a-f]{64}$`, d)
	k2, _, err := NewKey()
	require.NoError(t, err)
	assert.NotEqual(t, k, k2)
}

func TestParseRefuses(t *testing.T) {
	d := HashKey(strings.Repeat("k", 40))
	for name, body := range map[string]string{
		"not json":        `{`,
		"no tenants":      `{"tenants":[]}`,
		"unknown field":   fmt.Sprintf(`{"tenants":[{"name":"a","keys":[%q],"rateLimit":5}]}`, d),
		"bad name":        fmt.Sprintf(`{"tenants":[{"name":"a b","keys":[%q]}]}`, d),
		"duplicate name":  fmt.Sprintf(`{"tenants":[{"name":"a","keys":[%q]},{"name":"a","keys":[%q]}]}`, d, HashKey(strings.Repeat("j", 40))),
		"no keys":         `{"tenants":[{"name":"a"}]}`,
		"clear key":       `{"tenants":[{"name":"a","keys":["sbk_0123456789012345678901234567890123456789"]}]}`,
		"shared digest":   fmt.Sprintf(`{"tenants":[{"name":"a","keys":[%q]},{"name":"b","keys":[%q]}]}`, d, d),
		"bad wall clock":  fmt.Sprintf(`{"tenants":[{"name":"a","keys":[%q],"limits":{"wallClock":"soon"}}]}`, d),
		"negative memory": fmt.Sprintf(`{"tenants":[{"name":"a","keys":[%q],"limits":{"memoryBytes":-1}}]}`, d),
		"negative cap":    fmt.Sprintf(`{"tenants":[{"name":"a","keys":[%q],"maxConcurrentRuns":-1}]}`, d),
		"negative rate":   fmt.Sprintf(`{"tenants":[{"name":"a","keys":[%q],"ratePerSecond":-1}]}`, d),
		"burst only":      fmt.Sprintf(`{"tenants":[{"name":"a","keys":[%q],"burst":3}]}`, d),
		"empty engine":    fmt.Sprintf(`{"tenants":[{"name":"a","keys":[%q],"engines":[""]}]}`, d),
		"trailing text":   fmt.Sprintf(`{"tenants":[{"name":"a","keys":[%q]}]} {}`, d),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(body))
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrInvalid), "%v", err)
			assert.NotContains(t, err.Error(), "sbk_0123", "the error must not echo a key")
		})
	}
}

func TestQuotasFromTheDocument(t *testing.T) {
	d := HashKey(strings.Repeat("k", 40))
	s := doc(t, fmt.Sprintf(`{"tenants":[{"name":"a","keys":[%q],"engines":["starlark","goja","goja"],
		"limits":{"wallClock":"1500ms","memoryBytes":1048576},"maxConcurrentRuns":2,"ratePerSecond":0.001,"burst":2}]}`, d))
	a := s.Tenants()[0]
	assert.Equal(t, []string{"goja", "starlark"}, a.Engines)
	assert.True(t, a.AllowsEngine("goja"))
	assert.False(t, a.AllowsEngine("quickjs"))
	assert.Equal(t, int64(1<<20), a.Limits.MemoryBytes)
	assert.Equal(t, "1.5s", a.Limits.WallClock.String())

	// The bucket holds two tokens and refills once in 1000 s.
	for range 2 {
		ok, _ := a.Allow()
		assert.True(t, ok)
	}
	ok, after := a.Allow()
	assert.False(t, ok)
	assert.Greater(t, after.Seconds(), 100.0)

	// Two slots, then none until one is given back; releasing twice
	// gives back one slot only.
	r1, err := a.Acquire()
	require.NoError(t, err)
	r2, err := a.Acquire()
	require.NoError(t, err)
	_, err = a.Acquire()
	assert.ErrorIs(t, err, effect.ErrQuota)
	assert.Equal(t, effect.KindQuota, effect.KindOf(err))
	r1()
	r1()
	assert.Equal(t, 1, a.InFlight())
	r3, err := a.Acquire()
	require.NoError(t, err)
	_, err = a.Acquire()
	assert.ErrorIs(t, err, effect.ErrQuota)
	r2()
	r3()
	assert.Equal(t, 0, a.InFlight())
}

func TestDefaults(t *testing.T) {
	s := doc(t, fmt.Sprintf(`{"tenants":[{"name":"a","keys":[%q],"ratePerSecond":5}]}`, HashKey(strings.Repeat("k", 40))))
	a := s.Tenants()[0]
	assert.Equal(t, DefaultMaxConcurrentRuns, a.MaxConcurrentRuns)
	assert.Equal(t, 5, a.Burst)
	assert.True(t, a.AllowsEngine("anything"))

	dev := Dev()
	assert.Equal(t, "dev", dev.Name)
	for range 1000 {
		ok, _ := dev.Allow()
		require.True(t, ok, "dev has no rate limit")
	}
	for range 1000 {
		_, err := dev.Acquire()
		require.NoError(t, err, "dev has no concurrent cap of its own")
	}
}

func TestConcurrentAcquireNeverPassesTheCap(t *testing.T) {
	s := doc(t, fmt.Sprintf(`{"tenants":[{"name":"a","keys":[%q],"maxConcurrentRuns":3}]}`, HashKey(strings.Repeat("k", 40))))
	a := s.Tenants()[0]
	var wg sync.WaitGroup
	var mu sync.Mutex
	peak, cur := 0, 0
	for range 32 {
		wg.Go(func() {
			for range 200 {
				release, err := a.Acquire()
				if err != nil {
					continue
				}
				mu.Lock()
				cur++
				peak = max(peak, cur)
				mu.Unlock()
				mu.Lock()
				cur--
				mu.Unlock()
				release()
			}
		})
	}
	wg.Wait()
	assert.LessOrEqual(t, peak, 3)
	assert.Equal(t, 0, a.InFlight())
}

func TestLoadAndFromEnv(t *testing.T) {
	k, d, err := NewKey()
	require.NoError(t, err)
	body := fmt.Sprintf(`{"tenants":[{"name":"a","keys":[%q]}]}`, d)
	path := filepath.Join(t.TempDir(), "tenants.json")
	require.NoError(t, os.WriteFile(path, []byte(body), 0o600))
	s, err := Load(path)
	require.NoError(t, err)
	_, ok := s.Authenticate(k)
	assert.True(t, ok)

	_, err = Load(filepath.Join(t.TempDir(), "missing.json"))
	assert.Error(t, err)

	t.Setenv(EnvVar, "")
	_, set, err := FromEnv()
	assert.False(t, set)
	assert.NoError(t, err)
	t.Setenv(EnvVar, body)
	s, set, err = FromEnv()
	require.NoError(t, err)
	require.True(t, set)
	_, ok = s.Authenticate(k)
	assert.True(t, ok)
}

// TestPackages: a tenant's python packages are checked as python checks
// them (python.CheckPackages: top-level import names, a bounded count),
// kept sorted without duplicates, and the document's distinct sets are
// at most pool.MaxPackageSets.
func TestPackages(t *testing.T) {
	key := func(i int) string { return HashKey(fmt.Sprintf("%040d", i)) }
	tenants := func(sets ...string) string {
		var ts []string
		for i, s := range sets {
			ts = append(ts, fmt.Sprintf(`{"name":"t%d","keys":[%q],"packages":%s}`, i, key(i), s))
		}
		return `{"tenants":[` + strings.Join(ts, ",") + `]}`
	}

	s := doc(t, tenants(`["pandas","numpy","pandas"]`, `[]`))
	assert.Equal(t, []string{"numpy", "pandas"}, s.Tenants()[0].Packages)
	assert.Empty(t, s.Tenants()[1].Packages, "none listed: the server's own")

	var sets []string
	for i := range pool.MaxPackageSets {
		sets = append(sets, fmt.Sprintf(`["numpy","p%d"]`, i))
	}
	sets = append(sets, `["p0","numpy"]`, `["numpy","p1","p1"]`, `[]`)
	doc(t, tenants(sets...)) // the same set in another order counts once

	many := make([]string, python.MaxPackages+1)
	for i := range many {
		many[i] = fmt.Sprintf("%q", fmt.Sprintf("p%d", i))
	}
	for name, body := range map[string]string{
		"path":          tenants(`["../x"]`),
		"submodule":     tenants(`["numpy.linalg"]`),
		"empty name":    tenants(`[""]`),
		"NUL":           tenants(`["a\u0000b"]`),
		"too many":      tenants(`[` + strings.Join(many, ",") + `]`),
		"too many sets": tenants(append(sets, `["numpy","another"]`)...),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(body))
			assert.ErrorIs(t, err, ErrInvalid)
		})
	}
	_, err := Parse([]byte(tenants(append(sets, `["numpy","another"]`)...)))
	assert.ErrorContains(t, err, fmt.Sprintf("at most %d", pool.MaxPackageSets))
}
