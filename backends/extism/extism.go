package extism

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	xt "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/sys"

	wasmrewrite "github.com/sandbank/sandbank/internal/wasm/rewrite"
	"github.com/sandbank/sandbank/spi"
)

// Language is the language the backend declares: arbitrary WebAssembly.
const Language = "wasm"

// DefaultFunctionName is the export a plugin must provide when
// Options.FunctionName is empty.
const DefaultFunctionName = "run"

// DefaultModuleCacheSize is the number of compiled modules kept when
// Options.ModuleCacheSize is zero.
const DefaultModuleCacheSize = 64

// MaxVarBytes bounds the Extism var store of one run (held on the Go heap,
// outside the wasm memory budget).
const MaxVarBytes = 1 << 20

// The names of the thrown errors this backend reports.
const (
	// NameCompileError: the bytes are not a valid module, or the module
	// needs an import or export the host does not provide.
	NameCompileError = "CompileError"
	// NameTrap: the plugin trapped (unreachable, out-of-bounds access,
	// stack overflow, a host function refusing a call, …).
	NameTrap = "trap"
	// NameOutputError: the plugin finished but its output is not JSON text.
	NameOutputError = "OutputError"
)

const wasmPageSize = 65536

// Options configure the backend. A nil *Options means defaults.
type Options struct {
	// FunctionName is the export each run calls. Empty means
	// DefaultFunctionName ("run").
	FunctionName string
	// EnableWASI provides wasi_snapshot_preview1 to plugins, with no
	// preopened directories, no environment, no arguments, fake clocks and
	// a deterministic random source. Default false: a plugin that imports
	// WASI fails to instantiate (Threw CompileError).
	EnableWASI bool
	// AllowedHosts are the host names (exact, or "*.example.com") a plugin
	// may reach with the Extism HTTP host function. Empty (the default)
	// means none, and the backend declares Network none; otherwise it
	// declares Network allowlist, which the effect refuses unless the
	// operator allows network access. Every port and scheme of an allowed
	// host is reachable.
	AllowedHosts []string
	// ModuleCacheSize bounds how many compiled modules the backend keeps.
	// Zero means DefaultModuleCacheSize; negative is refused.
	ModuleCacheSize int
}

// Backend runs Extism plugins; see the package documentation. Build one
// with [New]; it is safe for concurrent use, and [Backend.Close] releases
// the compiled modules.
type Backend struct {
	fn    string
	wasi  bool
	hosts []string
	caps  spi.Capabilities

	compilation wazero.CompilationCache
	inspector   wazero.Runtime
	modules     *moduleCache

	closeOnce sync.Once
	// warmMu guards warming and closing: Close waits for a Warm's compile
	// in flight (it does not stop when Warm's context ends) before it
	// closes the compilation cache under it.
	warmMu  sync.Mutex
	warming sync.WaitGroup
	closing bool

	// Test hooks, nil outside tests: called after the module is compiled
	// (or found in the cache) and after the instance is created, before
	// the wall clock is armed.
	afterCompile     func()
	afterInstantiate func()
	// beforeKernel is called by Warm's compile before it starts.
	beforeKernel func()
	// now is the clock the wall clock is measured with (time.Now; tests
	// replace it).
	now func() time.Time
}

var (
	_ spi.Backend = (*Backend)(nil)
	_ spi.Warmer  = (*Backend)(nil)
)

// New returns a backend that runs Extism plugins (language "wasm"). A nil
// opts means defaults.
func New(opts *Options) (*Backend, error) {
	return newBackend(opts)
}

func newBackend(opts *Options) (*Backend, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.FunctionName == "" {
		o.FunctionName = DefaultFunctionName
	}
	switch {
	case o.ModuleCacheSize < 0:
		return nil, fmt.Errorf("extism: module cache size %d is negative", o.ModuleCacheSize)
	case o.ModuleCacheSize == 0:
		o.ModuleCacheSize = DefaultModuleCacheSize
	}
	hosts := make([]string, 0, len(o.AllowedHosts))
	for _, h := range o.AllowedHosts {
		if err := checkHost(h); err != nil {
			return nil, err
		}
		hosts = append(hosts, h)
	}
	b := &Backend{
		fn:          o.FunctionName,
		wasi:        o.EnableWASI,
		hosts:       hosts,
		caps:        Declare(&o),
		compilation: wazero.NewCompilationCache(),
		now:         time.Now,
	}
	// The inspector is configured like the plugins' runtimes (wazero's
	// cache key covers the termination checks), so the machine code it
	// compiles is the code the plugin then runs.
	b.inspector = wazero.NewRuntimeWithConfig(context.Background(), b.runtimeConfig())
	enableSDKLogs()
	b.modules = newModuleCache(o.ModuleCacheSize, b.compile, func() {
		_ = b.inspector.Close(context.Background())
		_ = b.compilation.Close(context.Background())
	})
	return b, nil
}

// checkHost refuses allowlist entries that are empty, carry a scheme, port
// or path (the SDK matches host names only, so they would never match), or
// are patterns other than a "*." prefix (a bare "*" would open the network
// while the declaration says allowlist).
func checkHost(h string) error {
	name := strings.TrimPrefix(h, "*.")
	switch {
	case h == "":
		return errors.New("extism: empty allowed host")
	case strings.ContainsAny(name, "*?[]{}!\\/: \t"):
		return fmt.Errorf("extism: allowed host %q must be a host name or \"*.\" followed by one", h)
	case name == "":
		return fmt.Errorf("extism: allowed host %q matches every host", h)
	}
	return nil
}

func (b *Backend) runtimeConfig() wazero.RuntimeConfig {
	return wazero.NewRuntimeConfig().
		WithCompilationCache(b.compilation).
		WithCloseOnContextDone(false) // the rewritten plugin's stop check stops it (stopcheck.go)
}

// Warm implements spi.Warmer: it compiles the Extism kernel into the shared
// compilation cache, so the first run does not pay for it. wazero's
// compiler does not watch a context, so the compile goes on by itself
// and Warm returns when ctx ends; Close waits for it.
func (b *Backend) Warm(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b.warmMu.Lock()
	if b.closing {
		b.warmMu.Unlock()
		return errClosed
	}
	b.warming.Add(1)
	b.warmMu.Unlock()
	done := make(chan error, 1)
	go func() {
		defer b.warming.Done()
		done <- b.compileKernel()
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// compileKernel compiles the Extism kernel into the compilation cache.
func (b *Backend) compileKernel() error {
	if b.beforeKernel != nil {
		b.beforeKernel()
	}
	ctx := context.Background()
	p, err := xt.NewCompiledPlugin(ctx, xt.Manifest{
		Wasm:    []xt.Wasm{xt.WasmData{Data: emptyModule, Name: "main"}},
		Timeout: 1,
	}, xt.PluginConfig{RuntimeConfig: b.runtimeConfig()}, nil)
	if err != nil {
		return fmt.Errorf("extism: warm: %w", err)
	}
	return p.Close(ctx)
}

// emptyModule is the smallest valid wasm module.
var emptyModule = []byte("\x00asm\x01\x00\x00\x00")

// Close releases every compiled module. Runs in flight finish first;
// Evaluate fails after Close.
func (b *Backend) Close() error {
	b.closeOnce.Do(func() {
		b.warmMu.Lock()
		b.closing = true
		b.warmMu.Unlock()
		b.warming.Wait()
		b.modules.close()
	})
	return nil
}

// Evaluate implements spi.Backend.
func (b *Backend) Evaluate(ctx context.Context, req spi.Request) (spi.Outcome, error) {
	if err := ctx.Err(); err != nil {
		return spi.Outcome{}, err
	}
	switch {
	case req.Limits.WallClock <= 0:
		return spi.Outcome{}, errors.New("extism: wall clock limit must be positive")
	case req.Limits.MemoryBytes <= 0:
		return spi.Outcome{}, errors.New("extism: memory limit must be positive")
	case len(req.Input) == 0:
		return spi.Outcome{}, errors.New("extism: empty input")
	}
	begun := b.now()
	key := moduleKey{sum: sha256.Sum256(req.Script), pages: maxPages(req.Limits.MemoryBytes)}
	entry, err := b.modules.acquire(ctx, key, req.Script)
	if err != nil {
		return spi.Outcome{}, err
	}
	defer b.modules.release(entry)
	if entry.val.outcome != nil {
		return *entry.val.outcome, nil
	}
	if b.afterCompile != nil {
		b.afterCompile()
	}
	if err := ctx.Err(); err != nil {
		return spi.Outcome{}, err
	}
	return b.run(ctx, entry.val.plugin, req, begun)
}

// maxPages converts a memory limit to wasm pages (at least one, at most
// the 4 GiB a wasm32 memory can address).
func maxPages(memoryBytes int64) uint32 {
	pages := memoryBytes / wasmPageSize
	return uint32(min(max(pages, 1), 65536))
}

// run creates a new instance of plugin, runs it once and reports what
// happened.
func (b *Backend) run(ctx context.Context, plugin *xt.CompiledPlugin, req spi.Request, begun time.Time) (spi.Outcome, error) {
	mem := newBudget(uint64(req.Limits.MemoryBytes), maxPages(req.Limits.MemoryBytes))
	// Instantiating runs the module's start function, the plugin's own
	// code: it is charged to the wall clock, which stops it (its stop
	// check sees the context done), and what it used is taken
	// off the clock of the call.
	clockStart := b.now()
	instCtx, cancelInst := context.WithTimeout(ctx, req.Limits.WallClock)
	out := newStdio(req.Logs)
	defer out.flush()
	inst, err := plugin.Instance(experimental.WithMemoryAllocator(startCtx(instCtx), mem), xt.PluginInstanceConfig{
		// No arguments, environment, directories or host clocks; standard
		// output and error go to the run's log, line by line.
		ModuleConfig: out.config(wazero.NewModuleConfig()),
	})
	instExpired := errors.Is(instCtx.Err(), context.DeadlineExceeded)
	cancelInst()
	used := b.now().Sub(clockStart)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return spi.Outcome{}, ctxErr
		}
		if instExpired {
			return spi.Limited(spi.LimitWallClock), nil
		}
		if mem.overflowed() {
			return spi.Limited(spi.LimitMemory), nil
		}
		return spi.Threw(NameCompileError, "extism: the module cannot be instantiated: "+firstLine(err.Error())), nil
	}
	defer inst.Close(context.Background())
	if ctxErr := ctx.Err(); ctxErr != nil {
		return spi.Outcome{}, ctxErr // the caller's deadline, not the script's
	}
	if instExpired || used >= req.Limits.WallClock {
		return spi.Limited(spi.LimitWallClock), nil
	}
	inst.SetLogger(logTo(req.Logs))
	if mem.overflowed() {
		return spi.Limited(spi.LimitMemory), nil
	}
	if b.afterInstantiate != nil {
		b.afterInstantiate()
	}

	// Seed the input once outside the wall clock: the kernel grows its
	// memory to hold it here, so an input that does not fit is reported as
	// such (the SDK would otherwise write it through a null block). The SDK
	// resets and seeds again inside the call, into memory already grown.
	if ptr, err := inst.SetInput(req.Input); err != nil || ptr == 0 || mem.wasRefused() {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return spi.Outcome{}, ctxErr
		}
		if err != nil && !mem.wasRefused() {
			return spi.Infrastructure("extism: seeding the input failed"), nil
		}
		return spi.InputTooLarge(), nil
	}
	// The input sits in the kernel's memory; a plugin reads it into its own
	// (that is its parse), so the run needs room for a second copy. An input
	// that leaves no room for it could never be used.
	if mem.inUse()+uint64(len(req.Input)) > uint64(req.Limits.MemoryBytes) {
		return spi.InputTooLarge(), nil
	}
	mem.clearRefused()

	// The SDK arms the rest of the wall clock here, at call time (it also
	// covers a runtime's initialiser, _initialize or hs_init, which the
	// SDK calls first): compiling and seeding the input are not charged
	// to the script.
	remaining := req.Limits.WallClock - used
	inst.Timeout = remaining
	callStart := b.now()
	rc, value, callErr := inst.CallWithContext(withHost(ctx, req.Host), b.fn, req.Input) // host.go
	callTime := b.now().Sub(callStart)
	late := callTime > remaining
	if ctxErr := ctx.Err(); ctxErr != nil {
		return spi.Outcome{}, ctxErr
	}
	o := b.outcome(inst, mem, rc, value, callErr)
	if late && o.Kind != spi.KindLimit {
		// The call ended after its wall clock (the timer lost the race on
		// a busy machine): its value, or its error, is never delivered.
		o = spi.Limited(spi.LimitWallClock)
	}
	if req.Logs != nil {
		// Linear memories never shrink: what the instance holds now (the
		// kernel's memory and the plugin's) is its high-water mark.
		o.Stats = spi.Stats{Startup: callStart.Sub(begun), ScriptTime: callTime, MemoryPeakBytes: int64(mem.inUse())}
	}
	return o, nil
}

// outcome maps what a call returned to an spi.Outcome.
func (b *Backend) outcome(inst *xt.Plugin, mem *budget, rc uint32, out []byte, callErr error) spi.Outcome {
	var exit *sys.ExitError
	if errors.As(callErr, &exit) {
		switch exit.ExitCode() {
		case sys.ExitCodeDeadlineExceeded:
			return spi.Limited(spi.LimitWallClock)
		case sys.ExitCodeContextCanceled:
			// ctx is not done (run checked), and the SDK's timer expires
			// with DeadlineExceeded: nothing the script did explains this.
			return spi.Infrastructure("extism: the engine cancelled the run")
		}
	}
	valid := isJSONText(out)
	failed := callErr != nil || rc != 0 || !valid
	if failed && (mem.wasRefused() || mem.atCap()) {
		return spi.Limited(spi.LimitMemory)
	}
	message := inst.GetError()
	switch {
	case exit != nil:
		return spi.Threw("", fmt.Sprintf("extism: the plugin exited with code %d", exit.ExitCode()))
	case callErr != nil && (message == "" || callErr.Error() != message):
		// The call itself failed: a trap, or a host function refusing.
		return spi.Threw(NameTrap, callErr.Error())
	case message != "":
		return spi.Threw("", message)
	case rc != 0:
		return spi.Threw("", fmt.Sprintf("extism: the plugin returned code %d without an error message", rc))
	case !valid:
		return spi.Threw(NameOutputError, "extism: the plugin output is not JSON text")
	}
	return spi.OK(out)
}

// compile validates script and compiles it into a plugin for key.
func (b *Backend) compile(key moduleKey, script []byte) (compiled, error) {
	ctx := context.Background()
	mod, err := b.inspector.CompileModule(ctx, script)
	if err != nil {
		return fixed(spi.Threw(NameCompileError, "extism: the bytes are not a valid wasm module: "+firstLine(err.Error()))), nil
	}
	// Keep the inspected module alive until the plugin is compiled, so the
	// shared compilation cache hands its machine code over.
	defer mod.Close(ctx)
	if o := b.checkModule(mod); o != nil {
		return fixed(*o), nil
	}
	// The module the plugin runs is the script rewritten with the stop
	// check; a module the rewriter does not understand is refused, never
	// run without the check. The cache key stays the script's: the
	// rewrite is a function of the script and of the pass version, which
	// is fixed for the process.
	rewritten, err := wasmrewrite.Rewrite(script)
	if err != nil {
		return fixed(spi.Threw(NameCompileError, "extism: the module cannot be given its stop check: "+firstLine(err.Error()))), nil
	}
	manifest := xt.Manifest{
		Wasm: []xt.Wasm{xt.WasmData{Data: rewritten, Name: "main"}},
		Memory: &xt.ManifestMemory{
			MaxPages:             key.pages,
			MaxHttpResponseBytes: int64(key.pages) * wasmPageSize,
			MaxVarBytes:          MaxVarBytes,
		},
		AllowedHosts: b.hosts,
		// Any non-zero timeout makes the SDK honour the context; each run
		// sets its own wall clock on its instance.
		Timeout: uint64(time.Hour / time.Millisecond),
	}
	plugin, err := xt.NewCompiledPlugin(ctx, manifest, xt.PluginConfig{
		RuntimeConfig: b.runtimeConfig(),
		EnableWasi:    b.wasi,
	}, append(hostFunctions(), preemptFunction()))
	if err != nil {
		if strings.Contains(err.Error(), "pages") && strings.Contains(err.Error(), "over limit") {
			// A memory whose declared minimum exceeds the cap (the
			// plugin's, or the Extism kernel's 1 MiB).
			return fixed(spi.Limited(spi.LimitMemory)), nil
		}
		return fixed(spi.Threw(NameCompileError, "extism: the module cannot be compiled: "+firstLine(err.Error()))), nil
	}
	return compiled{plugin: plugin}, nil
}

func fixed(o spi.Outcome) compiled { return compiled{outcome: &o} }

// checkModule refuses a module whose imports the host cannot satisfy or
// that lacks the function to call.
func (b *Backend) checkModule(mod wazero.CompiledModule) *spi.Outcome {
	for _, f := range mod.ImportedFunctions() {
		module, _, _ := f.Import()
		if module == "extism:host/env" || module == hostModule || (b.wasi && module == "wasi_snapshot_preview1") {
			continue
		}
		o := spi.Threw(NameCompileError, fmt.Sprintf("extism: the module imports from %q, which the host does not provide", module))
		return &o
	}
	fn, ok := mod.ExportedFunctions()[b.fn]
	if !ok {
		o := spi.Threw(NameCompileError, fmt.Sprintf("extism: the module does not export a function %q", b.fn))
		return &o
	}
	results := fn.ResultTypes()
	if len(fn.ParamTypes()) != 0 || len(results) > 1 || (len(results) == 1 && results[0] != api.ValueTypeI32) {
		o := spi.Threw(NameCompileError, fmt.Sprintf("extism: the function %q must take no parameters and return nothing or an i32", b.fn))
		return &o
	}
	return nil
}

// firstLine returns s up to its first newline (wazero appends stack traces
// to some errors).
func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
