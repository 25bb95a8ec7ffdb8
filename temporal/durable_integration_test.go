package temporal

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandbank/sandbank/builtin"
	"github.com/sandbank/sandbank/effect"
	"github.com/sandbank/sandbank/receipt"
	"github.com/sandbank/sandbank/registry"
	"github.com/sandbank/sandbank/storage"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// durableWorkerEnv, when set to "<host:port>|<task queue>|<store
// directory>|<signing key seed, hex>", makes the test binary a worker of
// durable runs instead of running tests: TestDurableRunsOnDevServer starts
// one that way, to kill it with SIGKILL while its runs wait.
const durableWorkerEnv = "SANDBANK_TEMPORAL_TEST_DURABLE_WORKER"

// purge asks the host how many rows match, then for a person's approval
// to delete them: the approval suspends the run.
const purge = `const rows = await host.count(input.table);
const ok = await host.approve({table: input.table, rows});
ok ? "deleted " + rows + " rows of " + input.table : "kept " + input.table`

// newDurableWorker returns a worker of quickjs runs whose host functions
// are count (the length of its argument's text) and approve (suspends),
// signing with the key of seed and keeping large continuations in dir.
func newDurableWorker(c client.Client, queue, dir string, seed []byte) (*Worker, error) {
	s, err := receipt.NewEd25519Signer(ed25519.NewKeyFromSeed(seed))
	if err != nil {
		return nil, err
	}
	store, err := storage.NewDirStore(dir, nil)
	if err != nil {
		return nil, err
	}
	var reg registry.Registry
	builtin.Register(&reg)
	return NewWorker(c, queue, &reg, &WorkerOptions{Options: Options{
		Engines:       []string{"quickjs"},
		Signer:        s,
		Continuations: store,
		Host: effect.HostFuncs{
			"count": func(_ context.Context, args json.RawMessage) (any, error) { return len(args), nil },
			"approve": func(context.Context, json.RawMessage) (any, error) {
				return nil, effect.Suspend("waiting for a person")
			},
		},
	}})
}

// durableWorkerProcess runs a newDurableWorker until its standard input
// closes or it is killed; it prints "ready" once polling.
func durableWorkerProcess(v string) int {
	f := strings.Split(v, "|")
	if len(f) != 4 {
		fmt.Fprintln(os.Stderr, "durable worker: want host:port|queue|dir|seed")
		return 1
	}
	seed, err := hex.DecodeString(f[3])
	if err != nil {
		fmt.Fprintln(os.Stderr, "durable worker:", err)
		return 1
	}
	c, err := client.Dial(client.Options{HostPort: f[0], Logger: quietLogger()})
	if err != nil {
		fmt.Fprintln(os.Stderr, "durable worker:", err)
		return 1
	}
	w, err := newDurableWorker(c, f[1], f[2], seed)
	if err == nil {
		err = w.Activities().Warm(context.Background()) // QuickJS compiled before the first run
	}
	if err == nil {
		err = w.Start()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "durable worker:", err)
		return 1
	}
	fmt.Println("ready")
	_, _ = io.Copy(io.Discard, os.Stdin)
	w.Stop()
	return 0
}

// TestDurableRunsOnDevServer runs a real Temporal dev server and a worker
// process; starts 100 durable runs of an approval script on quickjs (a
// tenth of them with an input large enough that their continuations go to
// the workers' shared store); waits until every one is suspended, when
// none has an activity pending; kills the worker with SIGKILL; starts
// another worker in this process; signals every run its answer; and
// requires every run to finish with the value the answer gives, its final
// record verifying with the workers' key, and its receipts chained.
func TestDurableRunsOnDevServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts a Temporal dev server")
	}
	const runs = 100
	begin := time.Now()
	bin := devServer(t)
	port := freePort(t)
	hostPort := "127.0.0.1:" + strconv.Itoa(port)
	startProcess(t, exec.Command(bin, "-port", strconv.Itoa(port)), "ready", 2*time.Minute, nil)
	c, err := client.Dial(client.Options{HostPort: hostPort, Logger: quietLogger()})
	require.NoError(t, err)
	t.Cleanup(c.Close)

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if d, ok := t.Deadline(); ok {
		ctx, cancel = context.WithDeadline(ctx, d.Add(-15*time.Second))
		defer cancel()
	}
	queue, dir := "sandbank-durable", t.TempDir()
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = byte(i + 1)
	}
	signer, err := receipt.NewEd25519Signer(ed25519.NewKeyFromSeed(seed))
	require.NoError(t, err)
	keys, err := receipt.NewKeySet(receipt.TrustedKey{PublicKey: signer.PublicKey()})
	require.NoError(t, err)

	// Worker B, the one to kill: a process of its own.
	bCmd := exec.Command(os.Args[0], "-test.run=^$")
	bCmd.Env = append(os.Environ(), durableWorkerEnv+"="+strings.Join([]string{hostPort, queue, dir, hex.EncodeToString(seed)}, "|"))
	startProcess(t, bCmd, "ready", time.Minute, nil)

	reqs := make([]Request, runs)
	wfs := make([]client.WorkflowRun, runs)
	prefix := "durable-" + strconv.FormatInt(begin.UnixNano(), 36) + "-"
	for i := range runs {
		table := "t" + strconv.Itoa(i)
		if i%10 == 3 {
			table += strings.Repeat("x", MaxInlineContinuation) // its continuation is stored
		}
		req, err := NewRequest([]byte(purge), map[string]string{"table": table})
		require.NoError(t, err)
		req.Engine = "quickjs"
		reqs[i] = req
		wfs[i], err = c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{ID: prefix + strconv.Itoa(i), TaskQueue: queue},
			DurableWorkflowName, DurableInput{Request: req})
		require.NoError(t, err)
	}

	// Every run suspended: its workflow answers that it waits, and it has
	// no activity pending (it holds no worker slot).
	for i, wf := range wfs {
		for {
			p, err := pendingOf(ctx, c, wf)
			if err == nil && p.Waiting {
				assert.Equal(t, "approve", p.Call, "run %d", i)
				break
			}
			require.NoError(t, ctx.Err(), "run %d never suspended (last query: %v)", i, err)
			if err == nil {
				// A run that ended instead of suspending fails the test now.
				d, err := c.DescribeWorkflowExecution(ctx, wf.GetID(), wf.GetRunID())
				require.NoError(t, err)
				if st := d.GetWorkflowExecutionInfo().GetStatus(); st != enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
					var res DurableResult
					err := wf.Get(ctx, &res)
					t.Fatalf("run %d ended %v before it suspended: %+v, %v", i, st, res.Record, err)
				}
			}
			time.Sleep(100 * time.Millisecond) // the next look at the server
		}
		d, err := c.DescribeWorkflowExecution(ctx, wf.GetID(), wf.GetRunID())
		require.NoError(t, err)
		assert.Empty(t, d.GetPendingActivities(), "run %d waits with an activity pending", i)
	}
	suspended := time.Since(begin)
	stored, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.NotEmpty(t, stored, "the large continuations are in the store")

	require.NoError(t, bCmd.Process.Kill())
	_, _ = bCmd.Process.Wait()

	// Worker A, in this process, after worker B is gone.
	wa, err := newDurableWorker(c, queue, dir, seed)
	require.NoError(t, err)
	require.NoError(t, wa.Activities().Warm(ctx))
	require.NoError(t, wa.Start())
	t.Cleanup(wa.Stop)

	for i, wf := range wfs {
		require.NoError(t, c.SignalWorkflow(ctx, wf.GetID(), wf.GetRunID(), AnswerSignal, Answer{Suspension: 1, Value: json.RawMessage(strconv.FormatBool(i%2 == 0))}))
	}
	for i, wf := range wfs {
		var res DurableResult
		require.NoError(t, wf.Get(ctx, &res), "run %d", i)
		require.NotNil(t, res.Record, "run %d", i)
		require.Nil(t, res.Record.Failure, "run %d: %v", i, res.Record.Failure)
		var in map[string]string
		require.NoError(t, json.Unmarshal(reqs[i].Input, &in))
		want := "kept " + in["table"]
		if i%2 == 0 {
			want = "deleted " + strconv.Itoa(len(in["table"])+2) + " rows of " + in["table"]
		}
		var got string
		require.NoError(t, json.Unmarshal(res.Record.Value, &got), "run %d", i)
		assert.Equal(t, want, got, "run %d", i)
		require.Len(t, res.Chain, 1, "run %d", i)
		verifyChain(t, res, reqs[i], keys)
	}
	t.Logf("%d durable runs: all suspended %v after the start (dev server included), worker B killed, all resumed on worker A and finished %v after the start",
		runs, suspended.Round(time.Millisecond), time.Since(begin).Round(time.Millisecond))
}

// pendingOf asks wf what it waits for.
func pendingOf(ctx context.Context, c client.Client, wf client.WorkflowRun) (Pending, error) {
	var p Pending
	v, err := c.QueryWorkflow(ctx, wf.GetID(), wf.GetRunID(), PendingQuery)
	if err == nil {
		err = v.Get(&p)
	}
	return p, err
}
