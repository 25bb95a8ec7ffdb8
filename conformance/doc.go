// Package conformance is the conformance kit: it turns Sandbank's security
// list into cases any backend author runs against a backend factory, per
// language, THROUGH package effect, so that it proves the composition a user
// deploys and not the bare engine.
//
// It is for backend authors (run conformancetest.Run, of package
// conformance/conformancetest, from a test next to the backend) and for
// tools (the command line prints the matrix from [Check]'s [Report],
// json.Marshal'ed). The kit links no package testing: its runner for tests
// is conformancetest. The report's types live in package
// conformance/verdict, so that a program that only reads reports (the HTTP
// server) links neither this kit nor its hostile fixtures.
//
//	func TestConformance(t *testing.T) {
//		conformancetest.Run(t, func() (spi.Backend, error) { return mybackend.New(nil) }, nil)
//	}
//
// # Cases and gates
//
// Every case runs a fixture script (see THE FIXTURE CONTRACT in package
// fixtures) on a fresh backend from the factory, through an effect.Effect
// over a storage.MemoryStore. A case checks a declaration only when the
// backend makes it; otherwise it is skipped with the capability named.
//
//	echo            3 runs in sequence and 4 at once, each its own input
//	                (with its own nonce), come back exactly; then 4 at
//	                once, each input over 64 KiB and of its own size
//	throw           typed scriptError whose message holds the thrown text
//	throw_named     (declarable) a thrown TypeError and ConformanceError
//	                (the script's own class), a rejected ReferenceError
//	                and ConformanceError: each a scriptError with the
//	                error's own name
//	syntax_error    typed scriptError
//	runaway_loop    typed limitExceeded cpu or wallClock (wall clock
//	                250 ms); with WallClock hard the backend's own
//	                Evaluate returns within it + StopGrace, and CPU falls
//	                to idle by the deadline + StopGrace + 1 s + the idle
//	                span; otherwise CPU falls to idle
//	runaway_native  (WallClock hard or Memory) one long native operation
//	                ends in a typed limit (wallClock, memory, or cpu when
//	                CPU is declared) and Evaluate returns within
//	                250 ms + StopGrace, timed after a warm-up
//	                echo on the same instance; CPU falls to idle (with
//	                WallClock hard, by the deadline + StopGrace + 1 s +
//	                the idle span)
//	allocation_bomb (Memory) typed limitExceeded memory, the host's memory
//	                grows by at most 4 × the memory limit + 64 MiB; CPU
//	                falls to idle
//	memory_limit    (Memory) on one instance: 1.25 × the limit held
//	                under 4 × the limit succeeds, then under the
//	                limit fails with limitExceeded memory, then 0.5
//	                × the limit succeeds
//	deep_recursion  typed scriptError or limitExceeded, never untyped; then
//	                an echo on the SAME instance succeeds
//	rich_value      astral characters, escapes, 2^31+1, ±(2^53-1), -42,
//	                3.25, 1e-7 and nesting 100 deep come back exactly
//	input_contract  many keys, a long string and a long array come back
//	                exactly, and the backend's own value keeps key order
//	no_network      (Network none or allowlist) a loopback canary sees no
//	                request and the probe reports nothing reached, or the
//	                engine aborts the probe with a typed error naming the
//	                refused address
//	no_escape       (Network none or allowlist) the probe finds no host
//	                capability and its clock reads the documented fake
//	                clock (fixtures.Set.Clock or Options.FakeClock, within
//	                fixtures.ClockSlack), or null when there is none
//	host_objects    every name the script reaches, two levels deep, is in
//	                the set's standard list or declared (HostObjects,
//	                Options.HostObjects), and every declared name is one
//	                it reaches (skipped with the set's reason where the
//	                language cannot enumerate)
//	fresh_per_run   (FreshPerRun) 16 runs of one script text in sequence,
//	                then 8 distinct texts at once, all answer {"runs":1}
//	                with their own nonce
//	warm            Warm honours a context that ends after 50 ms,
//	                finishes within WarmTimeout, and runs after it answer
//	                (fresh, when FreshPerRun)
//	cpu_budget      (CPU) under Options.CPUBudget's small budget a light
//	                script finishes, and a loop with a 10 s
//	                wall clock ends in limitExceeded cpu within
//	                5 s; CPU falls to idle
//	input_too_big   (Memory) a 12 MB "[0,0,…]" under a 16 MiB memory limit
//	                ends in typed inputTooLarge reported by the backend
//	                (Failure.Limit is the memory limit, not the byte ceiling)
//	abort           an already-cancelled context yields context.Canceled,
//	                no value and no typed failure
//	abort_mid_run   (WallClock hard) a loop with a 30 s wall clock is
//	                cancelled 100 ms after the backend was called (it
//	                must still be running then): the effect yields
//	                context.Canceled AND the backend's own Evaluate returns
//	                within StopGrace; CPU falls to idle by the
//	                cancellation + StopGrace + 1 s + the idle span
//	composition     an over-100,000-character thrown message with a lone
//	                surrogate arrives as a scriptError of at most
//	                effect.MaxTextUnits UTF-16 units (plus 32
//	                for the marker), valid UTF-8; a 2 MB output under a
//	                1 MiB MaxOutputBytes ends in limitExceeded output
//	logs            (Logs) three lines in order, levels and streams
//	                agreeing, bounded and storable, on a finishing and a
//	                failing run; a full log is cut with the marker
//	logs_order      (Logs) 1,500 lines naming their call's level, the
//	                streams alternating: every one in the record, in
//	                order, with its call's level on that level's stream
//	files_in        (Files) two input files, text and the 256 bytes: the
//	                script lists their names sorted, reads the text as
//	                UTF-8 and every byte intact, and writes no file
//	files_out       (Files) two written files, a string and bytes, come
//	                back in name order byte for byte, the receipt naming
//	                each by its digest
//	files_bounds    (Files) hostile input files (a parent or absolute
//	                path, a NUL, a name twice, 10,000 files) are refused
//	                by the effect before the backend runs; under bounds of
//	                3 files and 12 bytes, writing up to them (a name
//	                written twice counted once) finishes, one file or one
//	                byte more ends in limitExceeded files with no file
//	                returned; a write under a hostile name ("../x",
//	                "/etc/passwd", a NUL, "a/b", ".hidden", "") throws an
//	                error the script catches and writes nothing (as the
//	                set declares it with files_bounds.uncatchable or
//	                files_bounds.filesystem)
//	host_calls      (HostCalls) host.probe(input) then host.probe(answer):
//	                both calls arrive in order with their exact arguments,
//	                and the second answer (a fresh nonce, text beyond the
//	                BMP, ±(2^53-1), nesting) is the result exactly
//	host_errors     (HostCalls) a host error is caught with its exact text,
//	                uncaught it is a scriptError with bounded text; an
//	                argument over 256 bytes never reaches the host
//	host_limits     (HostCalls) host_loop ends in limitExceeded hostCalls
//	                after exactly 5 delivered calls; an answer
//	                over 256 bytes is a scriptError naming the bound
//	host_stop       (HostCalls) a run blocked in a host call ends in
//	                limitExceeded wallClock within 250 ms +
//	                StopGrace (a 4× and then 16× clock when the engine's
//	                start-up spent it before the call), and a cancelled one
//	                in context.Canceled, the host function's context done
//	                both times
//	host_stuck      (HostCalls) with MaxAbandoned 2, two runs
//	                stopped (wall clock, caller) inside a host function
//	                that ignores its context fill the cap: the next call
//	                is ErrOverloaded (retryable) until the kit releases
//	                the functions, and admitted again afterwards; the
//	                backend's own Evaluate returns within the wall clock
//	                + StopGrace, and within StopGrace of the cancellation
//	host_isolation  (HostCalls) 4 runs of host_calls at once on one
//	                backend, each with host functions of its own (first
//	                calls held until all are in one, or 2 s): each run's
//	                calls reach its own functions with its own arguments
//	                and its result is its own second answer
//	host_clock      (HostCalls, WallClock hard) host.probe, then a loop:
//	                the call is held StopGrace/2 from its entry, the wall
//	                clock is that + StopGrace/4 (×4, up to twice, when
//	                start-up spent it); the run ends in limitExceeded
//	                wallClock (or cpu) and the backend's own Evaluate
//	                returns within the wall clock + StopGrace/4 of the
//	                call's entry
//	host_exact      (HostCalls; declarable) host_calls with integers past
//	                2^53 and 2^64 in the input and every answer: exact
//	                both ways
//	host_concurrent (HostCalls; declarable) with MaxConcurrentHostCalls 3,
//	                a script issuing 7 calls at once: 3 are inside the
//	                host function before any is released, never more,
//	                and each release lets in the next call issued; the
//	                answers come back in order; a run cancelled with 3
//	                running and 2 queued returns context.Canceled, the
//	                running calls' contexts done, the queued never run
//	                (proved by signals, never by timing)
//
// Every host case fails a backend that calls its broker after its run
// ended (waiting 100 ms for such a call).
//
// Every script is varied per run (fixtures.Set.Prepare: the nonce
// placeholder replaced, the set's salt appended), so a backend that
// recognises fixtures by their hash recognises nothing, and the answers
// that must carry the nonce cannot be looked up. Each case records the
// figures it measured in CaseResult.Evidence, and Report.Proofs lists, per
// declared capability, the figures that proved it; docs/backend-authors.md
// explains each measurement and its margin. The kit's figures and bounds
// are its own, not API: a reader takes them from the report, where each
// Figure carries the bound and rule it was held to.
//
// # Notes
//
// The factory is called once up front to read the declaration, then once
// per case (cpu_budget uses Options.CPUBudget when set), so cases never
// share an instance unless the backend shares state itself. Every instance
// is closed (io.Closer) when its case ends, each Close within
// Options.CloseTimeout (a Close still running fails the case, and is left
// running: the kit never waits for it longer). The instance the
// declaration was read from is closed the same way; when its Close does
// not return, the report's first result, named "probe", fails.
//
// For every case the kit sets effect.Options.AllowNetwork exactly when the
// backend declares a network other than none, AllowReusedEnvironment
// exactly when it declares FreshPerRun false, and Limits to the case's
// limits. Defaults: ordinary cases run with a 5 s wall clock and
// 32 MiB of memory unless Options.Limits says otherwise; each
// case is bounded by a 30 s watchdog unless Options.Watchdog says
// otherwise.
//
// A case that does not finish within the watchdog fails with "watchdog:
// case did not finish within …". The kit cannot kill a goroutine: it
// cancels the case's context, closes the case's backends and moves on,
// leaving the goroutine of a truly hung backend behind.
//
// Host memory in allocation_bomb is the resident set read from
// /proc/self/statm every 2 ms (Linux), or elsewhere the Go runtime's mapped
// memory from runtime/metrics; the growth is the peak over the level
// before the run. Other tests running in the same process at the same time
// add to it, so run the kit's cases sequentially (Check and conformancetest.Run do).
//
// Rich values are compared as JSON values: both texts are decoded with
// json.Decoder.UseNumber, numbers are equal when their decimal texts denote
// the same rational (math/big.Rat; so 1e-7 equals 1E-7 and 0.0000001, and
// 9007199254740991 does not equal 9007199254740992), strings are compared
// after unescaping, and object keys as sets.
//
// The timings the kit asserts are a hard clock's stop (deadline +
// StopGrace, default 1 s), the CPU budget's stop (half of its wall
// clock), Warm's return under a cancelled context, and the fall to idle
// (3 windows of 100 ms under 5 % of a core, within
// IdleWait). Each margin is wide against its deadline, so a loaded 2-core
// machine passes and a backend seconds late does not. Every other "in
// time" is the watchdog; a Close still running after CloseTimeout fails
// its case.
//
// # Security considerations
//
// The fixtures are hostile: the probes really try to reach the network,
// read host files and escape the engine, and the bombs really allocate.
// Run the kit only against a backend you are prepared to see fail; an
// in-process backend that declares Memory falsely can exhaust the test
// process. The canary listens on 127.0.0.1 only, for the duration of
// no_network.
package conformance
