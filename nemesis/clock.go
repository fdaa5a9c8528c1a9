package nemesis

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"
)

// ClockFile is where a node's clock shim reads its offset, and ClockShim
// the shim itself (see images): LD_PRELOAD of it moves the wall clock that
// a C server (Redis) reads, and nothing else on the machine.
const (
	ClockFile = "/run/lockbench-clock"
	ClockShim = "/usr/local/lib/lockbench-clock.so"
)

// UnderClock returns a server's command and environment for running it
// under the clock shim, its offset file created at zero before it starts
// (the shim maps the file once, at start).
func UnderClock(cmd []string) (env, wrapped []string) {
	env = []string{"LD_PRELOAD=" + ClockShim, "LOCKBENCH_CLOCK=" + ClockFile}
	wrapped = append([]string{"sh", "-c", "head -c 8 /dev/zero > " + ClockFile + ` && exec "$0" "$@"`}, cmd...)
	return env, wrapped
}

// ClockFault is the clock fault's name: a run that asks for it starts the
// servers that read the wall clock under UnderClock.
const ClockFault = "clock"

var clockKind = Kind{Name: ClockFault, Targets: NodeTargets, Service: true,
	Needs: func(t Topology) string {
		switch {
		case len(t.Service) == 0:
			return "has no lock-service nodes for clock"
		case !t.WallClock:
			return "has no server whose wall clock the clock shim's LD_PRELOAD can move"
		}
		return ""
	},
	New: func(ctx context.Context, e Env) Fault {
		return &Clock{Cluster: e.Cluster, Topology: e.Topology, Holders: e.Holders, Target: e.Target, TTL: e.TTL, Missing: shimMissing(ctx, e)}
	},
}

// shimMissing says why the clock shim cannot be used, if it cannot: a node
// image built where no C compiler was has none.
func shimMissing(ctx context.Context, e Env) string {
	if _, err := e.Cluster.Exec(ctx, e.Topology.Service[0], "test", "-f", ClockShim); err != nil {
		return "the node image has no clock shim (no C compiler where it was built)"
	}
	return ""
}

// Clock jumps (bump) or swings back and forth (strobe) the wall clock of
// lock-service nodes by twice the TTL, through the shim: a node whose clock jumps
// ahead expires a held lock early, and another client takes it.
type Clock struct {
	Cluster  Cluster
	Topology Topology
	Holders  Holders
	Target   string // a NodeTargets value; "" is TargetRandom
	TTL      time.Duration
	// Missing says why the shim is not in the image, if it is not.
	Missing string

	mu      sync.Mutex
	moved   map[string]bool
	stop    chan struct{}
	strobed sync.WaitGroup
}

// Name implements Fault.
func (c *Clock) Name() string { return "clock" }

// Inapplicable implements Inapplicable: whether the fault fits the lock
// service is settled before the run (clockKind.Needs); what remains is the
// image.
func (c *Clock) Inapplicable() string { return c.Missing }

// Inject implements Fault.
func (c *Clock) Inject(ctx context.Context, r *rand.Rand) (Injection, error) {
	// Drawn, the jump strikes one node or a minority: a majority of
	// Redlock's nodes jumping is asked for by name.
	_, targets, err := nodeShape(ctx, r, c.Topology, c.Holders, c.Target, []string{TargetOne, TargetMinority})
	if err != nil {
		return Injection{}, err
	}
	jump := 2 * c.TTL
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := hitEach(&c.moved, targets, func(t string) error { return c.set(ctx, t, jump) }); err != nil {
		return Injection{}, err
	}
	if r.IntN(2) == 0 {
		return Injection{Shape: "bump +" + jump.String(), Targets: targets}, nil
	}
	// Strobe: the clock swings between true and ahead every 100 ms until
	// healed, so time runs backwards half the time.
	c.stop = make(chan struct{})
	c.strobed.Add(1)
	go c.strobe(targets, jump, c.stop)
	return Injection{Shape: "strobe ±" + jump.String(), Targets: targets}, nil
}

func (c *Clock) strobe(targets []string, jump time.Duration, stop chan struct{}) {
	defer c.strobed.Done()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	ahead := true
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		ahead = !ahead
		off := time.Duration(0)
		if ahead {
			off = jump
		}
		for _, t := range targets {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = c.set(ctx, t, off)
			cancel()
		}
	}
}

func (c *Clock) set(ctx context.Context, node string, off time.Duration) error {
	_, err := c.Cluster.Exec(ctx, node, "lockbench", "clock-offset", ClockFile, strconv.FormatInt(int64(off), 10))
	return err
}

// Heal implements Fault.
func (c *Clock) Heal(ctx context.Context) error {
	c.mu.Lock()
	stop := c.stop
	c.stop = nil
	c.mu.Unlock()
	if stop != nil {
		close(stop)
		c.strobed.Wait()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return healEach(c.moved, func(n string) error { return c.set(ctx, n, 0) })
}
