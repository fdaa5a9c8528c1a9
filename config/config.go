// Package config holds what a user chooses for a run: the configuration
// test.json stores, --replay reads back, and every backend and fault is
// built from. It knows no backend and no fault; which ones exist and
// whether they fit together is for the packages that define them.
package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lockbench/lockbench/store"
	"github.com/lockbench/lockbench/workloads"
)

// Workloads, pause targets and Redis persistence settings this build
// knows.
var (
	Workloads = []string{"counter", "set"}
	// Targets are the values --target takes: whom a fault that strikes
	// clients strikes (holder, random, all), and which lock-service nodes
	// a fault that strikes nodes strikes (one, minority, majority, leader,
	// all; holder and random draw one of those, holder once a client holds
	// the lock). Each fault says which it takes (nemesis.Kind.Targets).
	Targets = []string{"holder", "random", "all", "one", "minority", "majority", "leader"}
	// PowerTargets are how many service nodes power-loss cuts at once:
	// one, a majority, or all (the default: a datacenter outage).
	PowerTargets = []string{"one", "majority", "all"}
	// Persistences are the Redis persistence settings for --redis-persistence.
	Persistences = []string{"none", "everysec", "always"}
)

// DefaultStore is the fenced lockbench store; a lock service may keep the
// protected value itself (backends.Keeper).
const DefaultStore = "lockbench"

// Defaults of the run flags that a matrix cell can vary (--ttl,
// --concurrency, --work-max): a cell's name says only where it departs
// from them. The others default to their zero value, Correct and
// FailClosed.
const (
	DefaultTTL         = 2 * time.Second
	DefaultConcurrency = 5
	DefaultWorkMax     = 200 * time.Millisecond
)

// DefaultWork is --work's default, uniform:0-DefaultWorkMax.
var DefaultWork = workloads.UniformWork(DefaultWorkMax)

// NoFault is the nemesis of a run without faults.
const NoFault = "none"

// Combine joins faults into one item of a list of them: `matrix --nemeses
// pause+partition,kill` makes two cells, the first running both faults,
// as `run --nemesis pause+partition` (the same as `pause,partition`) is
// one run with both.
const Combine = "+"

// SplitFaults spreads the combinations among faults into one fault each.
func SplitFaults(faults []string) []string {
	var out []string
	for _, f := range faults {
		out = append(out, strings.Split(f, Combine)...)
	}
	return out
}

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
	// PauseTarget is --target (named for the one fault that took it
	// first, and so stored in test.json).
	PauseTarget string `json:"pause_target"`
	// PowerTarget is how many service nodes power-loss cuts at once.
	PowerTarget  string   `json:"power_target,omitempty"`
	RestartDelay Duration `json:"restart_delay"`
	// RedisPersistence is how Redis nodes keep data across a restart.
	RedisPersistence string `json:"redis_persistence"`
	// PgLock is the PostgreSQL advisory lock's mode, PgIdleTimeout the
	// server's idle_session_timeout and idle_in_transaction_session_timeout
	// (0: off); only the postgres backend keeps them.
	PgLock        string   `json:"pg_lock,omitempty"`
	PgIdleTimeout Duration `json:"pg_idle_timeout,omitempty"`
	// Work is the distribution of each section's work (workloads.ParseWork).
	Work string `json:"work"`
	// WorkMax is read only from the test.json of runs made before Work
	// existed; Check turns it into Work's uniform:0-MAX.
	WorkMax Duration `json:"work_max,omitempty"`
	// Think is the distribution of the time a client waits between a
	// release and its next acquire (workloads.ParseThink); empty is none.
	Think        string   `json:"think,omitempty"`
	OpTimeout    Duration `json:"op_timeout"`
	CheckTimeout Duration `json:"check_timeout"`
	// CheckLease makes clients skip the write when they already know their
	// lease is lost.
	CheckLease bool `json:"check_lease"`
	// Variant is the lock client's code path: Correct, or one of the
	// known-broken variants its backend offers.
	Variant string `json:"variant"`
	// Failpoint, when set, makes the client faults that can (pause,
	// kill-client) strike a client when it reaches this named point of its
	// code instead of at a random moment.
	Failpoint string `json:"failpoint,omitempty"`
	// OnLockError is what a client does when the lock service cannot be
	// reached: FailClosed skips the section, FailOpen runs it unlocked.
	OnLockError string `json:"on_lock_error"`
	// Link shapes the link fault: the shapes it draws from (--link), the
	// links it strikes (--link-path), and the delay of its delay and
	// slow-close shapes (--link-delay).
	Link      []string `json:"link,omitempty"`
	LinkPath  string   `json:"link_path,omitempty"`
	LinkDelay Duration `json:"link_delay,omitempty"`
	// RTT is a steady round trip on every client link, for the whole run
	// (--rtt); 0 is none.
	RTT Duration `json:"rtt,omitempty"`
}

// Correct is the lock client as its library's users are told to write it.
const Correct = "correct"

// What a client does when its lock service cannot be reached.
const (
	FailClosed = "closed"
	FailOpen   = "open"
)

// LockErrors are the values --on-lock-error takes.
var LockErrors = []string{FailClosed, FailOpen}

// Key is the key of the shared resource, and the lock's name.
const Key = "x"

// ErrUsage marks a configuration error: exit code 254.
var ErrUsage = errors.New("bad arguments")

// Usage is a configuration error, wrapped in ErrUsage.
func Usage(format string, a ...any) error {
	return fmt.Errorf("%w: %s", ErrUsage, fmt.Sprintf(format, a...))
}

// Check reports the first error in the choices that need no knowledge of
// backends and faults, wrapped in ErrUsage, and fills in defaults.
func (c *Config) Check() error {
	if !slices.Contains(Workloads, c.Workload) {
		return Usage("unknown workload %q (want one of %s)", c.Workload, strings.Join(Workloads, ", "))
	}
	c.Nemesis = SplitFaults(c.Nemesis)
	if len(c.Nemesis) == 0 {
		c.Nemesis = []string{NoFault}
	}
	for i, n := range c.Nemesis {
		if n == NoFault && len(c.Nemesis) > 1 {
			return Usage("nemesis none cannot be combined with other faults")
		}
		if slices.Contains(c.Nemesis[:i], n) {
			return Usage("nemesis %s is asked for twice", n)
		}
	}
	if _, err := store.ParseFence(string(c.Fence)); err != nil {
		return Usage("%v", err)
	}
	if c.Store == "" {
		c.Store = DefaultStore
	}
	// Renewals run every TTL/3 and Redis calls are bounded by TTL/4: below
	// 100 ms these are shorter than a container's scheduling noise.
	if c.TTL.D() < 100*time.Millisecond {
		return Usage("--ttl must be at least 100ms, got %s", c.TTL.D())
	}
	if c.TimeLimit.D() <= 0 {
		return Usage("--time-limit must be positive, got %s", c.TimeLimit.D())
	}
	if c.Concurrency < 1 || c.Concurrency > 64 {
		return Usage("--concurrency must be between 1 and 64, got %d", c.Concurrency)
	}
	if c.NemesisInterval.D() <= 0 {
		return Usage("--nemesis-interval must be positive, got %s", c.NemesisInterval.D())
	}
	if c.PauseTarget == "" {
		c.PauseTarget = "holder"
	}
	if !slices.Contains(Targets, c.PauseTarget) {
		return Usage("unknown --target %q (want one of %s)", c.PauseTarget, strings.Join(Targets, ", "))
	}
	if c.PowerTarget == "" {
		c.PowerTarget = PowerTargets[len(PowerTargets)-1]
	}
	if !slices.Contains(PowerTargets, c.PowerTarget) {
		return Usage("unknown --power-target %q (want one of %s)", c.PowerTarget, strings.Join(PowerTargets, ", "))
	}
	if c.RedisPersistence == "" {
		c.RedisPersistence = "none"
	}
	if !slices.Contains(Persistences, c.RedisPersistence) {
		return Usage("unknown --redis-persistence %q (want one of %s)", c.RedisPersistence, strings.Join(Persistences, ", "))
	}
	if c.RestartDelay.D() < 0 {
		return Usage("--restart-delay must not be negative, got %s", c.RestartDelay.D())
	}
	if c.FaultDuration.D() <= 0 {
		return Usage("--fault-duration must be positive, got %s", c.FaultDuration.D())
	}
	if c.Variant == "" {
		c.Variant = Correct
	}
	if c.OnLockError == "" {
		c.OnLockError = FailClosed
	}
	if !slices.Contains(LockErrors, c.OnLockError) {
		return Usage("unknown --on-lock-error %q (want one of %s)", c.OnLockError, strings.Join(LockErrors, ", "))
	}
	if c.Work == "" {
		c.Work = workloads.UniformWork(c.WorkMax.D())
	}
	c.WorkMax = 0
	if _, err := workloads.ParseWork(c.Work); err != nil {
		return Usage("%v", err)
	}
	if _, err := workloads.ParseThink(c.Think); err != nil {
		return Usage("%v", err)
	}
	return nil
}

// Works is the run's work distribution; Check has made sure it parses.
func (c *Config) Works() workloads.Work {
	w, _ := workloads.ParseWork(c.Work)
	return w
}

// CheckTimes reports the first error in how the run's times fit together,
// wrapped in ErrUsage.
func (c *Config) CheckTimes() error {
	if c.TTL.D() >= c.TimeLimit.D() {
		return Usage("--ttl %s must be shorter than --time-limit %s: no lease could expire, let alone be taken over, within the run", c.TTL.D(), c.TimeLimit.D())
	}
	if c.Faulted() && c.FaultDuration.D() >= c.TimeLimit.D() {
		return Usage("--fault-duration %s must be shorter than --time-limit %s: the first fault would outlast the run", c.FaultDuration.D(), c.TimeLimit.D())
	}
	if c.OpTimeout.D() <= 0 {
		return Usage("--op-timeout must be positive, got %s", c.OpTimeout.D())
	}
	if c.CheckTimeout.D() <= 0 {
		return Usage("--check-timeout must be positive, got %s", c.CheckTimeout.D())
	}
	return nil
}

// TestName names the test for the results tree, e.g. redis-counter-pause-fence-none.
func (c *Config) TestName() string {
	if c.Variant != "" && c.Variant != Correct {
		return fmt.Sprintf("%s-%s-%s-%s-fence-%s", c.Backend, c.Variant, c.Workload, strings.Join(c.Nemesis, Combine), c.Fence)
	}
	if c.Store != DefaultStore {
		return fmt.Sprintf("%s-%s-%s-store-%s", c.Backend, c.Workload, strings.Join(c.Nemesis, Combine), c.Store)
	}
	return fmt.Sprintf("%s-%s-%s-fence-%s", c.Backend, c.Workload, strings.Join(c.Nemesis, Combine), c.Fence)
}

// Faulted reports whether the run asks for any fault.
func (c *Config) Faulted() bool { return !(len(c.Nemesis) == 1 && c.Nemesis[0] == NoFault) }

// Has reports whether the run asks for the fault named f.
func (c *Config) Has(f string) bool { return slices.Contains(c.Nemesis, f) }

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
