// Package runner runs one test: it brings the cluster up, runs the workload
// and the nemesis, collects the history and the store's log into the run's
// results directory, tears everything down and checks what was recorded.
package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockbench/lockbench/store"
)

// Backends, workloads, stores and faults this build knows.
var (
	Backends  = []string{"redis", "redlock", "redis-sentinel", "etcd", "zookeeper", "cas", "nolock"}
	Workloads = []string{"counter", "set"}
	Stores    = []string{"lockbench", "etcd"}
	Nemeses   = []string{"none", "pause", "pause-node", "partition", "kill", "clock", "failover"}
	// PauseTargets are whom the client pause freezes.
	PauseTargets = []string{"holder", "random", "all"}
	// Persistences are the Redis persistence settings for --redis-persistence.
	Persistences = []string{"none", "everysec", "always"}
)

// Config is what a user chooses for a run; it is stored in test.json.
type Config struct {
	Backend         string      `json:"backend"`
	Workload        string      `json:"workload"`
	Nemesis         []string    `json:"nemesis"`
	Fence           store.Fence `json:"fence"`
	Store           string      `json:"store"`
	Nodes           int         `json:"nodes,omitempty"`
	TTL             Duration    `json:"ttl"`
	TimeLimit       Duration    `json:"time_limit"`
	Concurrency     int         `json:"concurrency"`
	Seed            int64       `json:"seed"`
	NemesisInterval Duration    `json:"nemesis_interval"`
	FaultDuration   Duration    `json:"fault_duration"`
	PauseTarget     string      `json:"pause_target"`
	RestartDelay    Duration    `json:"restart_delay"`
	// RedisPersistence is how Redis nodes keep data across a restart.
	RedisPersistence string   `json:"redis_persistence"`
	WorkMax          Duration `json:"work_max"`
	OpTimeout        Duration `json:"op_timeout"`
	CheckTimeout     Duration `json:"check_timeout"`
	// CheckLease makes clients skip the write when they already know their
	// lease is lost.
	CheckLease bool `json:"check_lease"`
}

// Key is the key of the shared resource, and the lock's name.
const Key = "x"

// ErrUsage marks a configuration error: exit code 254.
var ErrUsage = errors.New("bad arguments")

// Validate reports the first configuration error, wrapped in ErrUsage.
func (c *Config) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrUsage, fmt.Sprintf(format, a...))
	}
	if !contains(Backends, c.Backend) {
		return bad("unknown backend %q (want one of %s)", c.Backend, strings.Join(Backends, ", "))
	}
	if !contains(Workloads, c.Workload) {
		return bad("unknown workload %q (want one of %s)", c.Workload, strings.Join(Workloads, ", "))
	}
	if len(c.Nemesis) == 0 {
		c.Nemesis = []string{"none"}
	}
	for i, n := range c.Nemesis {
		if !contains(Nemeses, n) {
			return bad("unknown nemesis %q (want one of %s)", n, strings.Join(Nemeses, ", "))
		}
		if n == "none" && len(c.Nemesis) > 1 {
			return bad("nemesis none cannot be combined with other faults")
		}
		if slices.Contains(c.Nemesis[:i], n) {
			return bad("nemesis %s is asked for twice", n)
		}
	}
	if _, err := store.ParseFence(string(c.Fence)); err != nil {
		return bad("%v", err)
	}
	if c.Store == "" {
		c.Store = "lockbench"
	}
	if !contains(Stores, c.Store) {
		return bad("unknown store %q (want one of %s)", c.Store, strings.Join(Stores, ", "))
	}
	b := backends[c.Backend]
	if c.Fence != store.FenceNone && !b.tokens {
		return bad("%s issues no fencing tokens, so --fence %s would compare nothing; use --fence none", c.Backend, c.Fence)
	}
	if c.Store == "etcd" {
		if c.Backend != "etcd" {
			return bad("--store etcd keeps the counter in the etcd cluster of --backend etcd, not with %s", c.Backend)
		}
		if c.Fence != store.FenceNone {
			return bad("with --store etcd each write is a transaction on lock ownership, which is the fence; --fence applies to the lockbench store only")
		}
	}
	if c.Backend == "redlock" && (c.Nodes < 1 || c.Nodes > 9) {
		return bad("--nodes must be between 1 and 9 for redlock, got %d", c.Nodes)
	}
	if c.Backend != "redlock" {
		c.Nodes = 0
	}
	if c.Backend == "etcd" && (c.TTL.D() < time.Second || c.TTL.D()%time.Second != 0) {
		return bad("etcd leases count whole seconds: --ttl must be 1s, 2s, …, got %s", c.TTL.D())
	}
	// Renewals run every TTL/3 and Redis calls are bounded by TTL/4: below
	// 100 ms these are shorter than a container's scheduling noise.
	if c.TTL.D() < 100*time.Millisecond {
		return bad("--ttl must be at least 100ms, got %s", c.TTL.D())
	}
	if c.TimeLimit.D() <= 0 {
		return bad("--time-limit must be positive, got %s", c.TimeLimit.D())
	}
	if c.Concurrency < 1 || c.Concurrency > 64 {
		return bad("--concurrency must be between 1 and 64, got %d", c.Concurrency)
	}
	if c.NemesisInterval.D() <= 0 {
		return bad("--nemesis-interval must be positive, got %s", c.NemesisInterval.D())
	}
	if c.PauseTarget == "" {
		c.PauseTarget = "holder"
	}
	if !contains(PauseTargets, c.PauseTarget) {
		return bad("unknown --pause-target %q (want one of %s)", c.PauseTarget, strings.Join(PauseTargets, ", "))
	}
	if c.RedisPersistence == "" {
		c.RedisPersistence = "none"
	}
	if !contains(Persistences, c.RedisPersistence) {
		return bad("unknown --redis-persistence %q (want one of %s)", c.RedisPersistence, strings.Join(Persistences, ", "))
	}
	if c.RestartDelay.D() < 0 {
		return bad("--restart-delay must not be negative, got %s", c.RestartDelay.D())
	}
	if c.Has("failover") && c.Backend != "redis-sentinel" {
		return bad("the failover fault needs Sentinel: use --backend redis-sentinel")
	}
	if c.FaultDuration.D() <= 0 {
		return bad("--fault-duration must be positive, got %s", c.FaultDuration.D())
	}
	// A run that cannot show anything is refused before any container
	// starts, by the same rules that leave cells out of a matrix.
	if why := c.Inapplicable(); why != "" {
		return bad("nothing for the fault to act on: %s", why)
	}
	if c.TTL.D() >= c.TimeLimit.D() {
		return bad("--ttl %s must be shorter than --time-limit %s: no lease could expire, let alone be taken over, within the run", c.TTL.D(), c.TimeLimit.D())
	}
	if c.faulted() && c.FaultDuration.D() >= c.TimeLimit.D() {
		return bad("--fault-duration %s must be shorter than --time-limit %s: the first fault would outlast the run", c.FaultDuration.D(), c.TimeLimit.D())
	}
	if c.WorkMax.D() < 0 {
		return bad("--work-max must not be negative, got %s", c.WorkMax.D())
	}
	if c.OpTimeout.D() <= 0 {
		return bad("--op-timeout must be positive, got %s", c.OpTimeout.D())
	}
	if c.CheckTimeout.D() <= 0 {
		return bad("--check-timeout must be positive, got %s", c.CheckTimeout.D())
	}
	return nil
}

// TestName names the test for the results tree, e.g. redis-counter-pause-fence-none.
func (c *Config) TestName() string {
	if c.Store == "etcd" {
		return fmt.Sprintf("%s-%s-%s-store-etcd", c.Backend, c.Workload, strings.Join(c.Nemesis, "+"))
	}
	return fmt.Sprintf("%s-%s-%s-fence-%s", c.Backend, c.Workload, strings.Join(c.Nemesis, "+"), c.Fence)
}

// Inapplicable says why a fault asked for cannot act on the backend, if
// one cannot. It is the one rule both `run` (which refuses such a
// configuration) and `matrix` (which leaves such cells out, through
// Validate) follow.
func (c *Config) Inapplicable() string {
	b := backends[c.Backend]
	for _, f := range c.Nemesis {
		switch {
		case b.lockless && (f == "pause-node" || f == "kill" || f == "partition" || f == "clock"):
			return fmt.Sprintf("%s has no lock-service nodes for %s", c.Backend, f)
		case f == "clock" && c.Backend == "etcd":
			return "etcd reads the wall clock through the vDSO, where no LD_PRELOAD reaches, and its leases run on the monotonic clock"
		case f == "clock" && c.Backend == "zookeeper":
			return "ZooKeeper times sessions on the JVM's monotonic clock (System.nanoTime), which no LD_PRELOAD moves"
		}
	}
	return ""
}

// Warnings say where a valid configuration is weak: legal, but unlikely to
// show what its faults are there for.
func (c *Config) Warnings() []string {
	if !c.faulted() {
		return nil
	}
	var w []string
	if c.NemesisInterval.D() >= c.TimeLimit.D() {
		w = append(w, fmt.Sprintf("--nemesis-interval %s is not shorter than --time-limit %s: the first fault comes after %s to %s, so the run may see one fault or none",
			c.NemesisInterval.D(), c.TimeLimit.D(), c.NemesisInterval.D()/2, 3*c.NemesisInterval.D()/2))
	}
	for _, f := range []string{"pause", "pause-node", "partition", "failover"} {
		if c.Has(f) && c.FaultDuration.D() < c.TTL.D() {
			w = append(w, fmt.Sprintf("%s lasts %s, less than the %s TTL: a lease frozen or cut off for less than its TTL outlives the fault, so it can rarely if ever make two holders",
				f, c.FaultDuration.D(), c.TTL.D()))
		}
	}
	return w
}

// faulted reports whether the run asks for any fault.
func (c *Config) faulted() bool { return !(len(c.Nemesis) == 1 && c.Nemesis[0] == "none") }

// Has reports whether the run asks for the fault named f.
func (c *Config) Has(f string) bool { return contains(c.Nemesis, f) }

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Duration is a time.Duration written as "2s" in JSON, so test.json reads
// as the command line did.
type Duration time.Duration

// D is the duration as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("duration: %w", err)
	}
	*d = Duration(v)
	return nil
}
