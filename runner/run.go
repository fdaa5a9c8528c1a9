package runner

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
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
	"github.com/lockbench/lockbench/verdict"
)

const (
	// storeNode is the lockbench store's container, storeAddr its address.
	storeNode = "store"
	storeAddr = storeNode + ":7000"
	// storeLogPath is where the store keeps its log inside its container.
	storeLogPath = "/var/lib/lockbench/store.log"
	// resultsLabel on the store container names the run's results directory.
	resultsLabel = clusters.Label + ".results"
	// clientRole is the role of the clients' nodes.
	clientRole = "client"
	// probeWithin bounds the wait at bring-up for each node's probe, and
	// readyWithin that for the whole service's Ready check; the latter
	// also bounds the wait for the service after each heal (healthy).
	probeWithin = 30 * time.Second
	readyWithin = 60 * time.Second
)

// ErrInterrupted is returned, with the report of what was recorded, when
// the run was stopped before its time limit.
var ErrInterrupted = errors.New("run interrupted: the verdict above covers only what was recorded before it")

// ErrDiscarded is returned, with the report, for a run stopped at its
// first anomaly that the full check did not judge invalid
// (rundir.Discarded): it stands for no verdict.
var ErrDiscarded = errors.New("run discarded")

// stopCheckEvery is how often a run with StopAtFirstAnomaly asks the live
// stale-write count whether to stop: often enough that the run ends within
// a fraction of a second of the count going above 0, rarely enough that
// sorting the pending writes costs nothing next to the run.
const stopCheckEvery = 100 * time.Millisecond

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
	// Cell, when set, is the matrix cell this run is one of, for
	// test.json.
	Cell *rundir.Cell
	// StopAtFirstAnomaly ends the workload, as its time limit does, once
	// the live count of stale writes (the status line's) is above 0. It
	// changes when the run ends, not what it tests, so it is no part of
	// the configuration; test.json's stopped_at_first_anomaly says when it
	// struck.
	StopAtFirstAnomaly bool
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
	// served are the lock service's nodes as they were started, whose
	// probes the service passed at bring-up and passes again after each
	// heal.
	served  []backends.Service
	clients []string

	status  *status
	histErr atomic.Pointer[error]
	// phaseStart is when the phase under way began (see Options.Phase).
	phaseStart time.Time
	// versions receives, once, the versions of what the services run,
	// asked while the workload runs; nil until up has asked.
	versions <-chan map[string]string
	// stopped is set when StopAtFirstAnomaly ended the workload.
	stopped *rundir.Stop
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
		Images: others, Versions: map[string]string{"lockbench": verdict.Version(), "go": runtime.Version(), "docker-engine": eng.Version},
		HostClass: &rundir.HostClass{Cores: eng.Cores, Engine: eng.Version, StorageDriver: eng.StorageDriver}, Cell: opts.Cell}
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
		rep, cerr = verdict.Check(dir, verdict.Options{LinearTimeout: cfg.CheckTimeout.D(), Lease: backends.LeaseOf})
		r.phase("check")
		if cerr != nil && err == nil {
			err = cerr
		}
		if err == nil {
			err = Discard(rep)
		}
	}()

	if err := r.up(ctx, &test); err != nil {
		return nil, err
	}
	// Again, now that the service's health is known.
	if err := rundir.WriteJSON(dir, rundir.TestFile, test); err != nil {
		return nil, err
	}
	interrupted, err = r.workload(ctx)
	// The clients have stopped and every event they printed is recorded: the
	// history is complete up to here, which `check` needs to know.
	end := time.Now().UTC()
	test.End, test.Interrupted = &end, interrupted
	test.End = &end
	test.Stopped = r.stopped
	maps.Copy(test.Versions, <-r.versions)
	if werr := rundir.WriteJSON(dir, rundir.TestFile, test); werr != nil && err == nil {
		err = werr
	}
	if err == nil && interrupted {
		err = ErrInterrupted
	}
	return nil, err
}

// Discard is ErrDiscarded, saying why, for a judged run that stands for no
// verdict (rundir.Discarded); nil for any other.
func Discard(rep *rundir.Results) error {
	if rep == nil || !rep.Discarded() {
		return nil
	}
	return fmt.Errorf("%w: stopped at its first anomaly (%s's write at %s, counted stale live), yet the full check of the truncated run says %s: a run cut short counts only when it is invalid",
		ErrDiscarded, rep.Stopped.Process, history.Seconds(rep.Stopped.Write), rep.Verdict)
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

// up starts the lock service, the store and the clients, and waits until
// the service is healthy and the store answers. Starting containers is
// most of what a run costs beyond its time limit, so all of them start at
// once: the store and the clients wait on their standard input for what
// they can only learn once the service is healthy (the epoch, and with it
// the clients' specs), and start their work when it is sent.
func (r *run) up(ctx context.Context, test *rundir.Test) error {
	abs, err := filepath.Abs(r.dir)
	if err != nil {
		return fmt.Errorf("results directory: %w", err)
	}
	services := r.fitForFaults(r.layout.Services)
	r.served = services
	var store []backends.Service
	if r.cfg.Store == config.DefaultStore {
		store = []backends.Service{{
			Node: clusters.Node{Name: storeNode, Role: "store", Stdin: true, Labels: map[string]string{resultsLabel: abs}, Cmd: []string{
				"lockbench", "store", "--listen", ":7000", "--fence", string(r.cfg.Fence), "--log", storeLogPath, "--epoch-stdin",
			}},
			Probe: []string{"lockbench", "health", "127.0.0.1:7000"},
		}}
	}
	var clients []backends.Service
	for i := 1; i <= r.cfg.Concurrency; i++ {
		name := fmt.Sprintf("c%d", i)
		clients = append(clients, backends.Service{Node: clusters.Node{Name: name, Role: clientRole, Stdin: true,
			Cmd: []string{"lockbench", "worker", "-"}, Caps: r.caps()}})
		r.clients = append(r.clients, name)
	}
	if err := r.launch(ctx, slices.Concat(services, store, clients)); err != nil {
		return err
	}
	r.phase("containers up")
	// The store answers its probe before it knows the epoch (its reads
	// and writes wait for it), so it is probed beside the service.
	if err := r.probe(ctx, slices.Concat(services, store), probeWithin); err != nil {
		return err
	}
	r.phase("service up")
	// The versions are asked while the service elects its leader and the
	// workload begins, which need none of them; the run's end joins them
	// (see Run).
	versions := make(chan map[string]string, 1)
	r.versions = versions
	go func() {
		defer recovered("versions", func(error) { versions <- nil })
		versions <- r.askVersions(ctx, services, test.Versions)
	}()
	out, err := r.ready(ctx, readyWithin)
	if err != nil {
		return fmt.Errorf("%s not healthy: %w", r.cfg.Backend, err)
	}
	test.Health = strings.TrimSpace(out)
	r.phase("service healthy")
	// Time 0 of the history is here, when the lock service is up and the
	// workload is about to start, so that times read as the run's own.
	r.epoch = history.Mono()
	for _, s := range store {
		if err := r.cluster.Send(ctx, s.Node.Name, []byte(strconv.FormatInt(r.epoch, 10)+"\n")); err != nil {
			return err
		}
	}
	r.phase("store up")
	return nil
}

// askVersions asks the services' nodes for the version of what they run,
// one per role not yet in known.
func (r *run) askVersions(ctx context.Context, services []backends.Service, known map[string]string) map[string]string {
	found := map[string]string{}
	for _, s := range services {
		if _, ok := known[s.Node.Role]; ok || s.Version == nil {
			continue
		}
		if _, ok := found[s.Node.Role]; ok {
			continue
		}
		if v, err := r.cluster.Exec(ctx, s.Node.Name, s.Version...); err == nil {
			first, _, _ := strings.Cut(v, "\n")
			found[s.Node.Role] = strings.TrimSpace(first)
		}
	}
	return found
}

// start starts nodes and waits until each passes its probe.
func (r *run) start(ctx context.Context, services []backends.Service) error {
	if err := r.launch(ctx, services); err != nil {
		return err
	}
	return r.probe(ctx, services, probeWithin)
}

// launch starts nodes without waiting for anything. The nodes of services
// are kept as the run's services, whose logs the teardown saves; clients
// record what they say themselves.
func (r *run) launch(ctx context.Context, services []backends.Service) error {
	nodes := make([]clusters.Node, len(services))
	for i, s := range services {
		nodes[i] = s.Node
		if s.Node.Role != clientRole {
			r.services = append(r.services, s.Node.Name)
		}
	}
	return r.cluster.StartAll(ctx, nodes)
}

// probe waits until each of services that has a probe passes it, all of
// them side by side, each for at most within.
func (r *run) probe(ctx context.Context, services []backends.Service, within time.Duration) error {
	errs := make([]error, len(services))
	var wg sync.WaitGroup
	for i, s := range services {
		if s.Probe == nil {
			continue
		}
		wg.Go(func() {
			_, errs[i] = r.cluster.WaitReady(ctx, s.Node.Name, within, s.Probe...)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// ready waits, for at most within, until the layout's check of the whole
// service passes in its first node, and returns what the check said; ""
// for a service without one.
func (r *run) ready(ctx context.Context, within time.Duration) (string, error) {
	if r.layout.Ready == nil {
		return "", nil
	}
	return r.cluster.WaitReady(ctx, r.served[0].Node.Name, within, r.layout.Ready...)
}

// healthy waits, after a heal, until the service passes the checks it
// passed at bring-up: every node's probe, then the layout's Ready, each
// polled inside the nodes, within readyWithin in all. The nemesis records
// what it says. The nodes are probed one after the other, unlike at
// bring-up: the service is back only once all pass, so this costs little
// time, and one polling loop at a time (each starts a shell every 20 ms)
// leaves more of the CPU to the servers starting again.
func (r *run) healthy(ctx context.Context) error {
	deadline := time.Now().Add(readyWithin)
	// Each check gets what the ones before it left of the bound, and one
	// last try at least.
	left := func() time.Duration { return max(time.Until(deadline), time.Second) }
	var err error
	for _, s := range r.served {
		if s.Probe != nil && err == nil {
			_, err = r.cluster.WaitReady(ctx, s.Node.Name, left(), s.Probe...)
		}
	}
	if err == nil {
		_, err = r.ready(ctx, left())
	}
	if err != nil {
		return fmt.Errorf("%s not healthy again: %w", r.cfg.Backend, err)
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
	specs := make([]string, len(r.clients))
	for i, name := range r.clients {
		spec, err := r.workerSpec(name, seeds.Int64())
		if err != nil {
			return false, err
		}
		specs[i] = spec
	}
	r.status.watch(r.clients)
	// Sent together, so that no client has the lock to itself for the
	// first seconds.
	errs := make([]error, len(r.clients))
	var sent sync.WaitGroup
	for i, name := range r.clients {
		sent.Go(func() { errs[i] = r.cluster.Send(ctx, name, []byte(specs[i]+"\n")) })
	}
	sent.Wait()
	if err := errors.Join(errs...); err != nil {
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
		sched := nemesis.Schedule{Interval: r.cfg.NemesisInterval.D(), Duration: r.cfg.FaultDuration.D(), Healthy: r.healthy}
		nemDone <- nemesis.Run(limit, sched, r.faults, rand.New(rand.NewPCG(uint64(r.cfg.Seed), 1)), r.nemesisEvent)
	}()

	tick := time.NewTicker(r.status.every())
	defer tick.Stop()
	var check <-chan time.Time // nil, never ready, unless asked to stop
	if r.opts.StopAtFirstAnomaly {
		t := time.NewTicker(stopCheckEvery)
		defer t.Stop()
		check = t.C
	}
	var nemErr error
wait:
	for {
		select {
		case <-limit.Done():
			break wait
		case <-check:
			w, ok := r.status.firstStale()
			if !ok {
				continue
			}
			// Ended as at the time limit: the nemesis heals and returns,
			// and the clients finish what they have in flight below.
			r.stopped = &rundir.Stop{At: history.Mono() - r.epoch, Write: w.Time, Process: w.Process}
			cancel()
			r.status.say("  %s: stopping at the first anomaly: %s's write at %s was accepted from a stale holder",
				history.Seconds(r.stopped.At), w.Process, history.Seconds(w.Time))
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

// workerSpec is the spec of the client named name, which its worker reads.
func (r *run) workerSpec(name string, seed int64) (string, error) {
	return backends.Spec{
		Process: name, Workload: r.cfg.Workload, Backend: r.cfg.Backend, LockAddrs: r.layout.Addrs,
		Store: r.cfg.Store, StoreAddr: storeAddr, Key: config.Key, TTL: r.cfg.TTL, Seed: seed, Epoch: r.epoch,
		Work: r.cfg.Work, Think: r.cfg.Think, OpTimeout: r.cfg.OpTimeout, AcquireTimeout: 5 * r.cfg.TTL, CheckLease: r.cfg.CheckLease,
		Link: r.cfg.Has(nemesis.LinkFault) || r.cfg.RTT > 0, RTT: r.cfg.RTT,
		PgLock: r.cfg.PgLock, Variant: r.cfg.Variant, OnLockError: r.cfg.OnLockError,
		Failpoints: r.cfg.Failpoint != "" || nemesis.ArmsPoints(r.cfg.Nemesis),
	}.Encode()
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
	case e.F == history.Healthy && e.Type == history.Info:
		r.status.say("  %s: healthy again after %s", history.Seconds(e.Time), e.Fault)
	case e.F == history.Healthy:
		r.status.say("  %s: not healthy again after %s: %s", history.Seconds(e.Time), e.Fault, e.Error)
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
	// The store's log and the nodes' logs are fetched side by side: each
	// is a round trip to the engine, and together they are most of the
	// teardown before the containers go.
	saved := make([]error, len(r.services)+1)
	var wg sync.WaitGroup
	wg.Go(func() {
		data, err := r.storeLog(ctx)
		if err != nil {
			saved[0] = fmt.Errorf("save store log: %w", err)
			return
		}
		saved[0] = os.WriteFile(filepath.Join(r.dir, rundir.StoreFile), data, 0o644)
	})
	for i, name := range r.services {
		wg.Go(func() {
			// A node that said nothing (the store keeps its record in
			// store.log) leaves no empty file behind.
			if data, err := r.cluster.Logs(ctx, name); err == nil && len(data) > 0 {
				saved[i+1] = os.WriteFile(filepath.Join(r.dir, rundir.LogsDir, name+".log"), data, 0o644)
			}
		})
	}
	wg.Wait()
	errs := append([]error{healErr}, saved...)
	switch {
	case r.opts.LeaveRunning && healErr != nil:
		fmt.Fprintf(r.opts.Out, "cluster of run %s removed despite --leave-running: a fault could not be healed\n", r.cluster.RunID())
		errs = append(errs, r.cluster.Down(ctx))
	case r.opts.LeaveRunning:
		// The harness is done with it: what stays is no longer a live run.
		errs = append(errs, r.cluster.Release(ctx))
		fmt.Fprintf(r.opts.Out, "cluster of run %s left running (%s), faults healed; remove it with: lockbench clean --run %s\n",
			r.cluster.RunID(), strings.Join(r.services, ", "), r.cluster.RunID())
	default:
		errs = append(errs, r.cluster.Down(ctx))
	}
	errs = append(errs, r.hist.Close())
	// The history was written as events arrived, so that a frozen client
	// held nothing back; it ends in time order.
	if _, err := verdict.History(r.dir); err != nil {
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
	return r.cluster.ReadFile(ctx, storeNode, storeLogPath)
}
