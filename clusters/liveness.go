package clusters

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
)

// A run's liveness record is a container of its own that no fault touches
// and that runs exactly as long as the harness that started the run: it
// reads its standard input, which the harness holds attached, and exits on
// end of file, which the engine gives it as soon as the harness's
// connection closes, however the harness ended (SIGKILL included). Any
// client of the engine can read it, from any machine. A store that
// heartbeats would not do: it keeps running after the harness dies, and
// some runs have no store container. With --controller engine the
// controller container, which is the harness's own, plays that part.

// Roles and labels of the liveness record.
const (
	// LivenessRole is the role of a run's liveness container.
	LivenessRole = "liveness"
	// ControllerRole is the role of a controller container.
	ControllerRole = "controller"
	// ControllerEnv, set in a controller container, is that container's
	// name: the harness inside labels its runs with the container's id.
	ControllerEnv = "LOCKBENCH_CONTROLLER_CONTAINER"

	roleLabel       = Label + ".role"
	hostLabel       = Label + ".harness.host"
	pidLabel        = Label + ".harness.pid"
	startLabel      = Label + ".harness.start"
	controllerLabel = Label + ".harness.controller"
)

// startGrace is how long a liveness container that was created but has not
// started yet counts as live: the harness creates it, attaches to it, then
// starts it, and the run's other containers may already exist meanwhile.
// One older than that is what a harness killed between those steps left.
const startGrace = time.Minute

// Harness is who started a run: the process, and where it runs.
type Harness struct {
	Host  string    // host name, as test.json's controller.host
	PID   int       // process id on that host
	Start time.Time // the process's start: with PID, names one process
	// Controller is the id of the controller container the process runs
	// in (--controller engine), else empty.
	Controller string
}

// labels are h as the labels of a run's containers and network.
func (h Harness) labels() map[string]string {
	l := map[string]string{hostLabel: h.Host, pidLabel: strconv.Itoa(h.PID), startLabel: h.Start.UTC().Format(time.RFC3339Nano)}
	if h.Controller != "" {
		l[controllerLabel] = h.Controller
	}
	return l
}

// harnessOf reads the harness's identity back from labels; a run of an
// older lockbench has none, and gives the zero Harness.
func harnessOf(labels map[string]string) Harness {
	pid, _ := strconv.Atoi(labels[pidLabel])
	start, _ := time.Parse(time.RFC3339Nano, labels[startLabel])
	return Harness{Host: labels[hostLabel], PID: pid, Start: start, Controller: labels[controllerLabel]}
}

func (h Harness) String() string {
	if h.PID == 0 {
		return "no harness recorded"
	}
	where := "on " + h.Host
	if h.Controller != "" {
		where = "in controller container " + short(h.Controller)
	}
	return fmt.Sprintf("harness pid %d %s, started %s", h.PID, where, h.Start.Local().Format(time.DateTime))
}

func short(id string) string { return id[:min(12, len(id))] }

// self is this process's identity as a harness.
func (e *Engine) self(ctx context.Context) (Harness, error) {
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	h := Harness{Host: host, PID: os.Getpid(), Start: processStart()}
	if name := os.Getenv(ControllerEnv); name != "" {
		ins, err := e.ContainerInspect(ctx, name)
		if err != nil {
			return h, fmt.Errorf("find the controller container %s: %w", name, err)
		}
		h.Controller = ins.ID
	}
	return h, nil
}

// loaded is when this process set up its packages: its start time where
// the kernel's is not to be had.
var loaded = time.Now()

// processStart is when the kernel started this process, as `ps -o lstart`
// shows it, so that a person can match a run's labels to a process.
func processStart() time.Time {
	if t, err := startOf("self"); err == nil {
		return t
	}
	return loaded
}

// startOf is when the kernel started process pid ("self" for this one).
// The kernel counts it in clock ticks since boot, which Linux exposes to
// user space at 100 a second (USER_HZ) whatever its own tick rate.
func startOf(pid string) (time.Time, error) {
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return time.Time{}, err
	}
	bad := fmt.Errorf("/proc/%s/stat: %w", pid, errors.ErrUnsupported)
	// The fields after the command, which is in parentheses and may hold
	// spaces and parentheses; starttime is the 22nd field of the line, the
	// 20th after the command.
	end := strings.LastIndexByte(string(stat), ')')
	fields := strings.Fields(string(stat)[end+1:])
	if end < 0 || len(fields) < 20 {
		return time.Time{}, bad
	}
	ticks, err := strconv.ParseInt(fields[19], 10, 64)
	if err != nil {
		return time.Time{}, bad
	}
	boot, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, err
	}
	for _, line := range strings.Split(string(boot), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			if btime, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				return time.Unix(btime, 0).Add(time.Duration(ticks) * 10 * time.Millisecond), nil
			}
		}
	}
	return time.Time{}, bad
}

// endedHere reports whether h ran on this host, outside a controller
// container, and has ended: no process has its pid, or the one that has
// it started at another time. Where this host's processes cannot be read,
// it reports false.
func (h Harness) endedHere() bool {
	host, _ := os.Hostname()
	if h.PID == 0 || h.Controller != "" || h.Host != host || h.PID == os.Getpid() {
		return false
	}
	if _, err := startOf("self"); err != nil {
		return false
	}
	start, err := startOf(strconv.Itoa(h.PID))
	if errors.Is(err, fs.ErrNotExist) {
		return true
	}
	return err == nil && !start.Equal(h.Start)
}

// Settle waits, up to bound, until the liveness containers of live runs
// whose harness ran on this host and has ended have ended too. The engine
// ends a liveness container a moment after its harness's connection
// closes, not at once: a `clean` right after the harness was killed must
// not take its run for live. The record still decides (see Runs): Settle
// only waits for it. It reports whether it waited, after which the runs
// are to be listed again.
func (e *Engine) Settle(ctx context.Context, runs []RunState, bound time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	var wg sync.WaitGroup
	waited := false
	for _, r := range runs {
		if !r.Live || !r.Harness.endedHere() {
			continue
		}
		for _, o := range r.Objects {
			if o.Kind == "container" && o.Labels[roleLabel] == LivenessRole {
				waited = true
				wg.Go(func() {
					okc, errc := e.ContainerWait(ctx, o.ID, container.WaitConditionNotRunning)
					select {
					case <-okc:
					case <-errc:
					}
				})
			}
		}
	}
	wg.Wait()
	return waited
}

// liveness is a run's liveness container, held by this process.
type liveness struct {
	id  string
	att interface{ Close() }
	// started is closed when the container's start has returned, with
	// its error in startErr.
	started  chan struct{}
	startErr error
}

// wait returns once the container's start has, with its error.
func (l *liveness) wait() error {
	if l == nil {
		return nil
	}
	<-l.started
	return l.startErr
}

// close lets go of the liveness container's input: the container ends.
func (l *liveness) close() {
	if l != nil && l.att != nil {
		l.att.Close()
	}
}

// startLiveness creates run runID's liveness container, attaches to it,
// and starts it in the background: a start costs a second or more on a
// busy engine, while a container that is created and not yet started
// already counts as live (startGrace), so the rest of the run need not
// wait for it. It needs no network: it only waits for its input to end.
func (e *Engine) startLiveness(ctx context.Context, runID, image string, h Harness) (*liveness, error) {
	labels := h.labels()
	labels[Label], labels[roleLabel] = runID, LivenessRole
	resp, err := e.ContainerCreate(ctx,
		&container.Config{Image: image, Cmd: []string{"sh", "-c", "exec cat >/dev/null"}, Labels: labels,
			AttachStdin: true, OpenStdin: true, StdinOnce: true},
		&container.HostConfig{NetworkMode: "none"}, nil, nil, "lockbench-"+runID+"-"+LivenessRole)
	if err != nil {
		return nil, fmt.Errorf("create the run's liveness container: %w", err)
	}
	l := &liveness{id: resp.ID, started: make(chan struct{})}
	// Attached before it starts, as `docker run -i` does: a harness that
	// dies after the start cannot leave it waiting for an input nobody
	// holds. The attachment outlives ctx, which Ctrl-C ends before the
	// teardown.
	att, err := e.ContainerAttach(context.Background(), resp.ID, container.AttachOptions{Stream: true, Stdin: true})
	if err != nil {
		close(l.started)
		return l, fmt.Errorf("attach to the run's liveness container: %w", err)
	}
	l.att = &att
	go func() {
		defer close(l.started)
		if err := e.ContainerStart(ctx, resp.ID, container.StartOptions{}); err != nil {
			l.startErr = fmt.Errorf("start the run's liveness container: %w", err)
		}
	}()
	return l, nil
}

// Object is a container or network that a run labelled, as the engine
// lists it.
type Object struct {
	Kind  string // "container" or "network"
	Name  string
	ID    string
	RunID string
	// State is the container's ("running", "exited", "created"…); a
	// network has none.
	State   string
	Created time.Time
	Labels  map[string]string
}

// Labelled lists every container and network that carries the run label.
func (e *Engine) Labelled(ctx context.Context) ([]Object, error) {
	f := filters.NewArgs(filters.Arg("label", Label))
	cs, err := e.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list the runs' containers: %w", err)
	}
	ns, err := e.NetworkList(ctx, network.ListOptions{Filters: f})
	if err != nil {
		return nil, fmt.Errorf("list the runs' networks: %w", err)
	}
	var objs []Object
	for _, c := range cs {
		objs = append(objs, Object{Kind: "container", Name: name(c.Names), ID: c.ID, RunID: c.Labels[Label], State: c.State,
			Created: time.Unix(c.Created, 0), Labels: c.Labels})
	}
	for _, n := range ns {
		objs = append(objs, Object{Kind: "network", Name: n.Name, ID: n.ID, RunID: n.Labels[Label], Created: n.Created, Labels: n.Labels})
	}
	return objs, nil
}

// RunState is one run as the engine holds it, and whether it is live.
type RunState struct {
	ID      string
	Harness Harness
	Live    bool
	// Why says what made the run live or not, for people.
	Why     string
	Objects []Object
}

// Runs groups objs by run and tells, from objs alone, which runs are live
// at now: a run is live while its liveness container runs (or was created
// less than startGrace ago, and is about to start), or, for a run started
// inside a controller container, while that container runs; a controller
// container is live while it runs. A run that has no liveness record at
// all (from a lockbench older than the record) is not live. The runs come
// in the order of their first object.
func Runs(objs []Object, now time.Time) []RunState {
	running := map[string]bool{}
	for _, o := range objs {
		if o.Kind == "container" && o.State == container.StateRunning {
			running[o.ID] = true
		}
	}
	var runs []RunState
	at := map[string]int{}
	for _, o := range objs {
		i, ok := at[o.RunID]
		if !ok {
			i = len(runs)
			at[o.RunID] = i
			runs = append(runs, RunState{ID: o.RunID})
		}
		runs[i].Objects = append(runs[i].Objects, o)
	}
	for i := range runs {
		r := &runs[i]
		for _, o := range r.Objects {
			if h := harnessOf(o.Labels); h.PID != 0 {
				r.Harness = h
			}
		}
		r.Live, r.Why = liveBy(r, running, now)
	}
	return runs
}

// liveBy decides whether r is live, and why.
func liveBy(r *RunState, running map[string]bool, now time.Time) (bool, string) {
	recorded := false
	for _, o := range r.Objects {
		if o.Kind != "container" {
			continue
		}
		switch o.Labels[roleLabel] {
		case LivenessRole:
			recorded = true
			switch {
			case o.State == container.StateRunning:
				return true, "its liveness container runs: " + r.Harness.String()
			case o.State == container.StateCreated && now.Sub(o.Created) < startGrace:
				return true, "its liveness container is starting: " + r.Harness.String()
			}
		case ControllerRole:
			recorded = true
			if o.State == container.StateRunning {
				return true, "the controller container runs"
			}
		}
	}
	if ctl := r.Harness.Controller; ctl != "" {
		if running[ctl] {
			return true, "its controller container runs: " + r.Harness.String()
		}
		return false, "its controller container " + short(ctl) + " has ended: " + r.Harness.String()
	}
	if recorded {
		return false, "its harness is gone (its liveness container has ended): " + r.Harness.String()
	}
	return false, "no liveness record (a run of an older lockbench)"
}
