package runner

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockbench/lockbench/backends"
	"github.com/lockbench/lockbench/clusters"
	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/history"
	"github.com/lockbench/lockbench/images"
	"github.com/lockbench/lockbench/nemesis"
	"github.com/lockbench/lockbench/rundir"
)

const (
	storeAddr = "store:7000"
	// storeLogPath is where the store keeps its log inside its container.
	storeLogPath = "/var/lib/lockbench/store.log"
	// resultsLabel on the store container names the run's results directory.
	resultsLabel = clusters.Label + ".results"
)

// ErrInterrupted is returned, with the report of what was recorded, when
// the run was stopped before its time limit.
var ErrInterrupted = errors.New("run interrupted: the verdict above covers only what was recorded before it")

// Options are how to run, as opposed to what to test.
type Options struct {
	Results     string // root of the results tree
	Binary      string // the lockbench binary that goes into the node image
	ImageMethod images.Method
	Mirror      string
	Out         io.Writer // progress for people
	// LeaveRunning keeps the cluster's services up after the run, healed,
	// for debugging; `lockbench clean --run ID` removes them.
	LeaveRunning bool
	// Command is the command line that asked for the run, kept in
	// test.json for people; --replay reads Config, not this.
	Command []string
	// Controller says where this harness runs, for test.json; its Host is
	// filled in here.
	Controller rundir.Controller
	// Phase, when set, is told how long each phase of the run took, in
	// order: the benchmark of a run's overhead breaks it down by phase.
	Phase func(name string, took time.Duration)
}

type run struct {
	cfg      config.Config
	backend  backends.Backend
	layout   backends.Layout
	opts     Options
	dir      string
	epoch    int64
	hist     *history.Writer
	holders  *holders
	cluster  *clusters.Cluster
	faults   []nemesis.Fault
	services []string
	clients  []string

	status  *status
	histErr atomic.Pointer[error]
	// phaseStart is when the phase under way began (see Options.Phase).
	phaseStart time.Time
}

// phase ends the phase under way, named name, and starts the next.
func (r *run) phase(name string) {
	now := time.Now()
	if r.opts.Phase != nil {
		r.opts.Phase(name, now.Sub(r.phaseStart))
	}
	r.phaseStart = now
}

// Run runs one test and checks it. The cluster is torn down and every fault
// healed before it returns, whatever happened.
func Run(ctx context.Context, cfg config.Config, opts Options) (rep *rundir.Results, err error) {
	began := time.Now()
	if err := Validate(&cfg); err != nil {
		return nil, err
	}
	b, _ := backends.Lookup(cfg.Backend)
	eng, err := clusters.Connect(ctx)
	if err != nil {
		return nil, err
	}
	defer eng.Close()
	image, err := images.Ensure(ctx, eng.Client, images.Options{
		Binary: opts.Binary, Method: opts.ImageMethod, Mirror: opts.Mirror, Log: opts.Out,
	})
	if err != nil {
		return nil, fmt.Errorf("node image: %w", err)
	}

	layout := b.Layout(&cfg)
	others, err := ensureImages(ctx, eng, layout.Services, images.Options{Method: opts.ImageMethod, Mirror: opts.Mirror, Log: opts.Out})
	if err != nil {
		return nil, err
	}

	ctl := opts.Controller
	if ctl.Host, err = os.Hostname(); err != nil {
		ctl.Host = "unknown"
	}
	test := rundir.Test{Name: cfg.TestName(), RunID: newRunID(), Start: time.Now().UTC(), Command: opts.Command, Config: cfg, Image: image, Controller: ctl,
		Images: others, Versions: map[string]string{"lockbench": Version(), "go": runtime.Version(), "docker-engine": eng.Version}}
	dir := rundir.Path(opts.Results, test.Name, test.Start)
	if err := os.MkdirAll(filepath.Join(dir, rundir.LogsDir), 0o755); err != nil {
		return nil, fmt.Errorf("results directory: %w", err)
	}
	hist, err := history.Create(filepath.Join(dir, rundir.HistoryFile))
	if err != nil {
		return nil, err
	}
	r := &run{cfg: cfg, backend: b, layout: layout, opts: opts, dir: dir, hist: hist, holders: newHolders(!b.Locks()),
		status: newStatus(opts.Out, cfg.TimeLimit.D()), phaseStart: began}
	fmt.Fprintf(opts.Out, "run %s: %s, seed %d, results in %s\n", test.RunID, test.Name, cfg.Seed, dir)

	if err := rundir.WriteJSON(dir, rundir.TestFile, test); err != nil {
		hist.Close()
		return nil, err
	}
	cluster, err := clusters.New(ctx, eng, test.RunID, image)
	if err != nil {
		hist.Close()
		return nil, err
	}
	r.cluster = cluster
	r.phase("images and network")
	interrupted := false
	defer func() {
		terr := r.teardown()
		r.phase("teardown")
		if terr != nil && err == nil {
			err = terr
		}
		if err != nil && !interrupted {
			return
		}
		var cerr error
		rep, cerr = Check(dir, cfg.CheckTimeout.D())
		r.phase("check")
		if cerr != nil && err == nil {
			err = cerr
		}
	}()

	if err := r.up(ctx, &test); err != nil {
		return nil, err
	}
	// Again, now that the service's version is known.
	if err := rundir.WriteJSON(dir, rundir.TestFile, test); err != nil {
		return nil, err
	}
	interrupted, err = r.workload(ctx)
	// The clients have stopped and every event they printed is recorded: the
	// history is complete up to here, which `check` needs to know.
	end := time.Now().UTC()
	test.End = &end
	if werr := rundir.WriteJSON(dir, rundir.TestFile, test); werr != nil && err == nil {
		err = werr
	}
	if err == nil && interrupted {
		err = ErrInterrupted
	}
	return nil, err
}

// ensureImages builds, when missing, the images other than the node image
// that services' nodes run, and points those nodes at them. It returns
// them by kind, for test.json.
func ensureImages(ctx context.Context, eng *clusters.Engine, services []backends.Service, opts images.Options) (map[string]string, error) {
	var tags map[string]string
	for i := range services {
		k := services[i].Image
		if k == "" {
			continue
		}
		tag, ok := tags[string(k)]
		if !ok {
			var err error
			if tag, err = images.EnsureKind(ctx, eng.Client, k, opts); err != nil {
				return nil, fmt.Errorf("%s image: %w", k, err)
			}
			if tags == nil {
				tags = map[string]string{}
			}
			tags[string(k)] = tag
		}
		services[i].Node.Image = tag
	}
	return tags, nil
}

func newRunID() string {
	b := make([]byte, 4)
	_, _ = crand.Read(b)
	return hex.EncodeToString(b)
}

// up starts the lock service and the store and waits until both answer.
func (r *run) up(ctx context.Context, test *rundir.Test) error {
	abs, err := filepath.Abs(r.dir)
	if err != nil {
		return fmt.Errorf("results directory: %w", err)
	}
	services := r.fitForFaults(r.layout.Services)
	if err := r.start(ctx, services); err != nil {
		return err
	}
	r.phase("service up")
	if r.layout.Ready != nil {
		out, err := r.cluster.WaitReady(ctx, services[0].Node.Name, 60*time.Second, r.layout.Ready...)
		if err != nil {
			return fmt.Errorf("%s not healthy: %w", r.cfg.Backend, err)
		}
		test.Health = strings.TrimSpace(out)
	}
	r.phase("service healthy")
	// Time 0 of the history is here, when the lock service is up and the
	// workload is about to start, so that times read as the run's own.
	r.epoch = history.Mono()
	if r.cfg.Store == config.DefaultStore {
		if err := r.start(ctx, []backends.Service{{
			Node: clusters.Node{Name: "store", Role: "store", Cmd: []string{
				"lockbench", "store", "--listen", ":7000", "--fence", string(r.cfg.Fence), "--log", storeLogPath,
				"--epoch", strconv.FormatInt(r.epoch, 10),
			}, Labels: map[string]string{resultsLabel: abs}},
			Probe: []string{"lockbench", "health", "127.0.0.1:7000"},
		}}); err != nil {
			return err
		}
	}
	r.phase("store up")
	for _, s := range services {
		if _, known := test.Versions[s.Node.Role]; known || s.Version == nil {
			continue
		}
		if v, err := r.cluster.Exec(ctx, s.Node.Name, s.Version...); err == nil {
			first, _, _ := strings.Cut(v, "\n")
			test.Versions[s.Node.Role] = strings.TrimSpace(first)
		}
	}
	r.phase("versions")
	return nil
}

// start starts nodes and waits until each passes its probe.
func (r *run) start(ctx context.Context, services []backends.Service) error {
	nodes := make([]clusters.Node, len(services))
	for i, s := range services {
		nodes[i] = s.Node
		r.services = append(r.services, s.Node.Name)
	}
	if err := r.cluster.StartAll(ctx, nodes); err != nil {
		return err
	}
	for _, s := range services {
		if s.Probe == nil {
			continue
		}
		if _, err := r.cluster.WaitReady(ctx, s.Node.Name, 30*time.Second, s.Probe...); err != nil {
			return err
		}
	}
	return nil
}

// workload runs the clients and the nemesis for the time limit, then stops
// the clients and waits for their last events. It reports whether ctx ended
// first.
func (r *run) workload(ctx context.Context) (bool, error) {
	seeds := rand.New(rand.NewPCG(uint64(r.cfg.Seed), 0))
	var followers sync.WaitGroup
	followErrs := make(chan error, r.cfg.Concurrency)
	var clients []clusters.Node
	for i := 1; i <= r.cfg.Concurrency; i++ {
		name := fmt.Sprintf("c%d", i)
		cmd, err := r.workerCmd(name, seeds.Int64())
		if err != nil {
			return false, err
		}
		clients = append(clients, clusters.Node{Name: name, Role: "client", Cmd: cmd, Caps: r.caps()})
		r.clients = append(r.clients, name)
	}
	r.status.watch(r.clients)
	// Started together, so that no client has the lock to itself for the
	// first seconds.
	if err := r.cluster.StartAll(ctx, clients); err != nil {
		return false, err
	}
	for _, name := range r.clients {
		logFile := &lazyFile{path: filepath.Join(r.dir, rundir.LogsDir, name+".log")}
		followers.Add(1)
		go func() {
			defer followers.Done()
			defer logFile.Close()
			defer recovered("follow "+name, func(err error) { followErrs <- err })
			// The follower's context is not the run's: after Ctrl-C the
			// clients' last events must still be read.
			if err := r.cluster.Lines(context.Background(), name, logFile, func(line []byte) { r.clientLine(name, line, logFile) }); err != nil {
				followErrs <- err
			}
		}()
	}

	r.faults = r.buildFaults(ctx)
	r.phase("clients started")
	r.status.start()
	limit, cancel := context.WithTimeout(ctx, r.cfg.TimeLimit.D())
	defer cancel()
	nemDone := make(chan error, 1)
	go func() {
		defer recovered("nemesis", func(err error) { nemDone <- err })
		sched := nemesis.Schedule{Interval: r.cfg.NemesisInterval.D(), Duration: r.cfg.FaultDuration.D()}
		nemDone <- nemesis.Run(limit, sched, r.faults, rand.New(rand.NewPCG(uint64(r.cfg.Seed), 1)), r.nemesisEvent)
	}()

	tick := time.NewTicker(r.status.every())
	defer tick.Stop()
	var nemErr error
wait:
	for {
		select {
		case <-limit.Done():
			break wait
		case nemErr = <-nemDone:
			nemDone = nil
			if nemErr != nil {
				cancel()
			}
		case <-tick.C:
			r.status.draw()
		}
	}
	r.status.done()
	r.phase("time limit")
	interrupted := ctx.Err() != nil
	if nemDone != nil {
		nemErr = <-nemDone
	}
	r.stopClients()
	r.phase("clients stopped")
	followers.Wait()
	r.phase("last events read")
	close(followErrs)
	for err := range followErrs {
		if nemErr == nil {
			nemErr = err
		}
	}
	if p := r.histErr.Load(); p != nil && nemErr == nil {
		nemErr = *p
	}
	return interrupted, nemErr
}

// recovered, deferred in a run's goroutine, turns its panic into an error
// that ends the run through the teardown, instead of killing the process
// with faults in place and the cluster up.
func recovered(what string, report func(error)) {
	if p := recover(); p != nil {
		report(fmt.Errorf("%s: internal error: %v", what, p))
	}
}

// workerCmd is the command of the client named name: the worker and its
// one spec.
func (r *run) workerCmd(name string, seed int64) ([]string, error) {
	spec, err := backends.Spec{
		Process: name, Workload: r.cfg.Workload, Backend: r.cfg.Backend, LockAddrs: r.layout.Addrs,
		Store: r.cfg.Store, StoreAddr: storeAddr, Key: config.Key, TTL: r.cfg.TTL, Seed: seed, Epoch: r.epoch,
		Work: r.cfg.Work, Think: r.cfg.Think, OpTimeout: r.cfg.OpTimeout, AcquireTimeout: 5 * r.cfg.TTL, CheckLease: r.cfg.CheckLease,
		PgLock: r.cfg.PgLock, Variant: r.cfg.Variant, OnLockError: r.cfg.OnLockError,
		Failpoints: r.cfg.Failpoint != "" || nemesis.ArmsPoints(r.cfg.Nemesis),
	}.Encode()
	if err != nil {
		return nil, err
	}
	return []string{"lockbench", "worker", spec}, nil
}

// clientLine records one line a client printed: an event, or anything else
// it said, which goes to its log.
func (r *run) clientLine(name string, line []byte, log io.Writer) {
	if point, ok := nemesis.ParseHit(line); ok {
		fmt.Fprintf(log, "%s\n", line)
		r.holders.hit(name, point)
		return
	}
	var e history.Event
	if err := json.Unmarshal(line, &e); err != nil || (e.Process != name && e.Process != history.LeaseProcess(name)) {
		fmt.Fprintf(log, "%s\n", line)
		return
	}
	r.record(e)
	r.status.observe(e)
	r.holders.observe(e)
}

func (r *run) nemesisEvent(e history.Event) {
	e.Time = history.Mono() - r.epoch
	r.record(e)
	r.holders.observeNemesis(e)
	r.status.observe(e)
	switch {
	case e.F == history.Start && e.Type == history.Info:
		r.status.say("  %s: %s %s %s", history.Seconds(e.Time), e.Fault, e.Shape, strings.Join(e.Targets, " | "))
	case e.F == history.Start && e.Type == history.Fail && strings.HasPrefix(e.Error, "skipped"):
		r.status.say("  fault %s %s", e.Fault, e.Error)
	}
}

func (r *run) record(e history.Event) {
	if _, err := r.hist.Append(e); err != nil {
		r.histErr.CompareAndSwap(nil, &err)
	}
}

// stopClients asks every client to finish its cycle and exit, and kills
// those that do not within a grace period.
func (r *run) stopClients() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := nemesis.HealAll(ctx, r.faults); err != nil {
		fmt.Fprintf(r.opts.Out, "heal: %v\n", err)
	}
	// A client held at a failpoint was let go by the heal above.
	grace := r.cfg.Works().Longest() + 3*r.cfg.OpTimeout.D() + 5*time.Second
	var wg sync.WaitGroup
	for _, name := range r.clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = r.cluster.Signal(ctx, name, "SIGTERM")
			wctx, wcancel := context.WithTimeout(ctx, grace)
			defer wcancel()
			if _, err := r.cluster.Wait(wctx, name); err != nil {
				_ = r.cluster.Signal(ctx, name, "SIGKILL")
			}
		}()
	}
	wg.Wait()
}

// teardown heals faults, saves the store's log and the nodes' logs, and
// removes every container and the network of the run, unless LeaveRunning
// asked to keep them: then only a cluster whose faults all healed is kept,
// as no fault may outlive the run.
func (r *run) teardown() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	healErr := nemesis.HealAll(ctx, r.faults)
	errs := []error{healErr}
	if data, err := r.storeLog(ctx); err != nil {
		errs = append(errs, fmt.Errorf("save store log: %w", err))
	} else {
		errs = append(errs, os.WriteFile(filepath.Join(r.dir, rundir.StoreFile), data, 0o644))
	}
	for _, name := range r.services {
		// A node that said nothing (the store keeps its record in
		// store.log) leaves no empty file behind.
		if data, err := r.cluster.Logs(ctx, name); err == nil && len(data) > 0 {
			errs = append(errs, os.WriteFile(filepath.Join(r.dir, rundir.LogsDir, name+".log"), data, 0o644))
		}
	}
	switch {
	case r.opts.LeaveRunning && healErr != nil:
		fmt.Fprintf(r.opts.Out, "cluster of run %s removed despite --leave-running: a fault could not be healed\n", r.cluster.RunID())
		errs = append(errs, r.cluster.Down(ctx))
	case r.opts.LeaveRunning:
		fmt.Fprintf(r.opts.Out, "cluster of run %s left running (%s), faults healed; remove it with: lockbench clean --run %s\n",
			r.cluster.RunID(), strings.Join(r.services, ", "), r.cluster.RunID())
	default:
		errs = append(errs, r.cluster.Down(ctx))
	}
	errs = append(errs, r.hist.Close())
	// The history was written as events arrived, so that a frozen client
	// held nothing back; it ends in time order.
	if _, err := timeOrdered(r.dir); err != nil && !errors.Is(err, history.ErrTruncated) {
		errs = append(errs, fmt.Errorf("history in time order: %w", err))
	}
	return errors.Join(errs...)
}

// lazyFile is a log created on its first write, so that a client that said
// nothing beyond its events leaves no empty file. The client's standard
// error and its other output are written from two goroutines.
type lazyFile struct {
	path string
	mu   sync.Mutex
	f    *os.File
	err  error
}

func (l *lazyFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil && l.err == nil {
		if l.f, l.err = os.Create(l.path); l.err != nil {
			l.err = fmt.Errorf("client log: %w", l.err)
		}
	}
	if l.err != nil {
		return 0, l.err
	}
	return l.f.Write(p)
}

func (l *lazyFile) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	return l.f.Close()
}

// storeLog fetches the store's log: the lockbench store's file, or, with the
// counter kept in the lock service, what the service kept.
func (r *run) storeLog(ctx context.Context) ([]byte, error) {
	if k, ok := r.backend.(backends.Keeper); ok && r.cfg.Store == k.Keeps() {
		return k.StoreLog(ctx, r.cluster, &r.cfg)
	}
	return r.cluster.ReadFile(ctx, "store", storeLogPath)
}
