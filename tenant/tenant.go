package tenant

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/sandbank/sandbank/backends/python"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/pool"
	"github.com/sandbank/sandbank/spi"
)

// MinKeyLength is the shortest API key [Set.Authenticate] considers.
const MinKeyLength = 32

// EnvVar is the environment variable [FromEnv] reads: the tenants document
// itself, as JSON text.
const EnvVar = "SANDBANK_TENANTS"

// DefaultMaxConcurrentRuns is a tenant's cap on concurrent runs when its
// document sets none.
const DefaultMaxConcurrentRuns = 4

// maxDocumentBytes bounds a tenants document.
const maxDocumentBytes = 4 << 20

// ErrInvalid is matched by every error of Parse, Load and FromEnv about the
// document's content.
var ErrInvalid = errors.New("tenant: invalid tenants document")

// Tenant is one tenant and its quotas. Its methods are safe for concurrent
// use.
type Tenant struct {
	// Name names the tenant in logs and metrics; unique within a Set.
	Name string
	// Limits is the tenant's ceiling: no run may ask for more. A zero field
	// means the server's ceiling.
	Limits spi.Limits
	// Engines are the engines the tenant may use, sorted; empty means all.
	Engines []string
	// Packages are the python packages the tenant's runs may import
	// (python.Options.Packages), sorted; empty means the server's own
	// (the command line's --package), or none. A door passes them to
	// pool.Pool.Effect.
	Packages []string
	// MaxConcurrentRuns caps the tenant's runs in flight at once; zero
	// (the Dev tenant only) means no cap of its own.
	MaxConcurrentRuns int
	// RatePerSecond and Burst are the token bucket of the tenant's
	// requests; RatePerSecond zero means no rate limit.
	RatePerSecond float64
	Burst         int

	digests [][sha256.Size]byte
	limiter *rate.Limiter // nil: no rate limit
	slots   chan struct{}
}

// AllowsEngine reports whether the tenant may use the engine.
func (t *Tenant) AllowsEngine(engine string) bool {
	if len(t.Engines) == 0 {
		return true
	}
	_, found := slices.BinarySearch(t.Engines, engine)
	return found
}

// Allow takes one token from the tenant's bucket. When the bucket is empty
// it takes nothing and returns false with how long until a token is due,
// at least one second when rounded for a Retry-After header.
func (t *Tenant) Allow() (ok bool, retryAfter time.Duration) {
	if t.limiter == nil {
		return true, 0
	}
	r := t.limiter.Reserve()
	if !r.OK() {
		return false, time.Second
	}
	d := r.Delay()
	if d <= 0 {
		return true, 0
	}
	r.Cancel()
	return false, d
}

// Acquire takes one of the tenant's run slots without waiting. It returns
// the function that gives the slot back (call it exactly once), or, when
// MaxConcurrentRuns runs are in flight, an error matching effect.ErrQuota:
// its kind (effect.KindOf) is effect.KindQuota, which every door answers
// alike.
func (t *Tenant) Acquire() (release func(), err error) {
	if t.slots == nil {
		return func() {}, nil
	}
	select {
	case t.slots <- struct{}{}:
		var done bool
		return func() {
			if !done {
				done = true
				<-t.slots
			}
		}, nil
	default:
		return nil, fmt.Errorf("tenant: %s has %d runs in flight, its cap: %w", t.Name, t.MaxConcurrentRuns, effect.ErrQuota)
	}
}

// InFlight returns the tenant's runs in flight.
func (t *Tenant) InFlight() int { return len(t.slots) }

// Set is the tenants of a server.
type Set struct {
	tenants []*Tenant
}

// Tenants returns the set's tenants in document order.
func (s *Set) Tenants() []*Tenant { return slices.Clone(s.tenants) }

// Authenticate returns the tenant whose key is key, or false. It hashes key
// and compares the digest with every stored digest in constant time,
// without stopping at a match.
func (s *Set) Authenticate(key string) (*Tenant, bool) {
	if len(key) < MinKeyLength {
		return nil, false
	}
	d := sha256.Sum256([]byte(key))
	var found *Tenant
	for _, t := range s.tenants {
		for i := range t.digests {
			if subtle.ConstantTimeCompare(d[:], t.digests[i][:]) == 1 {
				found = t
			}
		}
	}
	return found, found != nil
}

// Dev returns the tenant of a server without keys (development mode):
// named "dev", every engine, the server's ceiling, no concurrent cap of
// its own (the server's global cap applies) and no rate limit.
func Dev() *Tenant {
	return &Tenant{Name: "dev"}
}

// HashKey returns the digest of a key as a tenants document holds it:
// "sha256:" and 64 lower-case hex digits.
func HashKey(key string) string {
	d := sha256.Sum256([]byte(key))
	return "sha256:" + hex.EncodeToString(d[:])
}

// NewKey returns a new random API key ("sbk_" and 43 base64url
// characters: 256 bits) and its digest for the tenants document.
func NewKey() (key, digest string, err error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", "", fmt.Errorf("tenant: drawing a key: %w", err)
	}
	key = "sbk_" + base64.RawURLEncoding.EncodeToString(b[:])
	return key, HashKey(key), nil
}

// document is the JSON form of one tenant.
type document struct {
	Name     string   `json:"name"`
	Keys     []string `json:"keys"`
	Engines  []string `json:"engines"`
	Packages []string `json:"packages"`
	Limits   struct {
		WallClock   string `json:"wallClock"`
		MemoryBytes int64  `json:"memoryBytes"`
	} `json:"limits"`
	MaxConcurrentRuns int     `json:"maxConcurrentRuns"`
	RatePerSecond     float64 `json:"ratePerSecond"`
	Burst             int     `json:"burst"`
}

var (
	nameRx   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]{0,63}$`) })
	digestRx = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^sha256:[0-9a-f]{64}$`) })
)

// Parse reads a tenants document. Every tenant needs a unique name and at
// least one key digest; a digest may belong to one tenant only.
func Parse(b []byte) (*Set, error) {
	if len(b) > maxDocumentBytes {
		return nil, fmt.Errorf("%w: larger than %d bytes", ErrInvalid, maxDocumentBytes)
	}
	var doc struct {
		Tenants []document `json:"tenants"`
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%w: text after the document", ErrInvalid)
	}
	if len(doc.Tenants) == 0 {
		return nil, fmt.Errorf("%w: no tenants", ErrInvalid)
	}
	s := &Set{}
	names := map[string]bool{}
	digests := map[string]string{}
	for i, d := range doc.Tenants {
		if !nameRx().MatchString(d.Name) {
			return nil, fmt.Errorf("%w: tenant %d: name must be 1 to 64 letters, digits, '.', '_' or '-'", ErrInvalid, i)
		}
		if names[d.Name] {
			return nil, fmt.Errorf("%w: tenant %q: duplicate name", ErrInvalid, d.Name)
		}
		names[d.Name] = true
		if len(d.Keys) == 0 {
			return nil, fmt.Errorf("%w: tenant %q: no keys", ErrInvalid, d.Name)
		}
		for _, k := range d.Keys {
			if !digestRx().MatchString(k) {
				return nil, fmt.Errorf("%w: tenant %q: a key must be its digest, \"sha256:\" and 64 lower-case hex digits (see NewKey; keys are never stored in clear)", ErrInvalid, d.Name)
			}
			if other, dup := digests[k]; dup {
				return nil, fmt.Errorf("%w: tenant %q: a key digest already belongs to tenant %q", ErrInvalid, d.Name, other)
			}
			digests[k] = d.Name
		}
		t, err := build(d)
		if err != nil {
			return nil, err
		}
		s.tenants = append(s.tenants, t)
	}
	sets := map[string]bool{}
	for _, t := range s.tenants {
		if len(t.Packages) > 0 {
			sets[strings.Join(t.Packages, " ")] = true
		}
	}
	if len(sets) > pool.MaxPackageSets {
		return nil, fmt.Errorf("%w: the tenants name %d distinct package sets, at most %d (each is an interpreter of its own)", ErrInvalid, len(sets), pool.MaxPackageSets)
	}
	return s, nil
}

// build makes a Tenant of a checked document entry.
func build(d document) (*Tenant, error) {
	t := &Tenant{Name: d.Name, MaxConcurrentRuns: d.MaxConcurrentRuns,
		RatePerSecond: d.RatePerSecond, Burst: d.Burst}
	if d.Limits.WallClock != "" {
		w, err := time.ParseDuration(d.Limits.WallClock)
		if err != nil || w <= 0 {
			return nil, fmt.Errorf("%w: tenant %q: limits.wallClock must be a positive duration such as 2s", ErrInvalid, d.Name)
		}
		t.Limits.WallClock = w
	}
	if d.Limits.MemoryBytes < 0 {
		return nil, fmt.Errorf("%w: tenant %q: negative limits.memoryBytes", ErrInvalid, d.Name)
	}
	t.Limits.MemoryBytes = d.Limits.MemoryBytes
	switch {
	case t.MaxConcurrentRuns < 0:
		return nil, fmt.Errorf("%w: tenant %q: negative maxConcurrentRuns", ErrInvalid, d.Name)
	case t.MaxConcurrentRuns == 0:
		t.MaxConcurrentRuns = DefaultMaxConcurrentRuns
	}
	t.slots = make(chan struct{}, t.MaxConcurrentRuns)
	switch {
	case t.RatePerSecond < 0 || t.Burst < 0:
		return nil, fmt.Errorf("%w: tenant %q: negative ratePerSecond or burst", ErrInvalid, d.Name)
	case t.RatePerSecond > 0:
		if t.Burst == 0 {
			t.Burst = max(1, int(t.RatePerSecond))
		}
		t.limiter = rate.NewLimiter(rate.Limit(t.RatePerSecond), t.Burst)
	case t.Burst > 0:
		return nil, fmt.Errorf("%w: tenant %q: burst without ratePerSecond", ErrInvalid, d.Name)
	}
	for _, e := range d.Engines {
		if e == "" {
			return nil, fmt.Errorf("%w: tenant %q: empty engine name", ErrInvalid, d.Name)
		}
	}
	t.Engines = slices.Compact(slices.Sorted(slices.Values(d.Engines)))
	pkgs, err := python.CheckPackages(d.Packages)
	if err != nil {
		return nil, fmt.Errorf("%w: tenant %q: packages: %v", ErrInvalid, d.Name, err)
	}
	t.Packages = pkgs
	for _, k := range d.Keys {
		var dg [sha256.Size]byte
		if _, err := hex.Decode(dg[:], []byte(strings.TrimPrefix(k, "sha256:"))); err != nil {
			return nil, fmt.Errorf("%w: tenant %q: key digest: %v", ErrInvalid, d.Name, err)
		}
		t.digests = append(t.digests, dg)
	}
	return t, nil
}

// Load reads the tenants document in the file at path.
func Load(path string) (*Set, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("tenant: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxDocumentBytes+1))
	if err != nil {
		return nil, fmt.Errorf("tenant: reading %s: %w", path, err)
	}
	return Parse(b)
}

// FromEnv reads the tenants document from the environment variable EnvVar.
// It reports false when the variable is unset or empty.
func FromEnv() (*Set, bool, error) {
	v := os.Getenv(EnvVar)
	if v == "" {
		return nil, false, nil
	}
	s, err := Parse([]byte(v))
	return s, true, err
}
