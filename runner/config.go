package runner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/lockbench/lockbench/backends"
	"github.com/lockbench/lockbench/config"
	"github.com/lockbench/lockbench/link"
	"github.com/lockbench/lockbench/nemesis"
	"github.com/lockbench/lockbench/store"
)

// Nemeses are the values --nemesis takes: none, or faults.
func Nemeses() []string { return append([]string{config.NoFault}, nemesis.Names()...) }

// Stores are the values --store takes: the lockbench store, and every
// store a lock service keeps itself.
func Stores() []string {
	out := []string{config.DefaultStore}
	for _, b := range backends.All {
		if k, ok := b.(backends.Keeper); ok {
			out = append(out, k.Keeps())
		}
	}
	return out
}

// Validate reports the first configuration error, wrapped in
// config.ErrUsage, and fills in defaults. It is the one rule both `run`
// (which refuses such a configuration before any container starts) and
// `matrix` (which leaves such cells out) follow.
func Validate(c *config.Config) error {
	b, ok := backends.Lookup(c.Backend)
	if !ok {
		return config.Usage("unknown backend %q (want one of %s)", c.Backend, strings.Join(backends.Names(), ", "))
	}
	c.Nemesis = config.SplitFaults(c.Nemesis)
	for _, n := range c.Nemesis {
		if !slices.Contains(Nemeses(), n) {
			return config.Usage("unknown nemesis %q (want one of %s)", n, strings.Join(Nemeses(), ", "))
		}
	}
	if err := c.Check(); err != nil {
		return err
	}
	if c.Fence != store.FenceNone && !b.Tokens() {
		return config.Usage("%s issues no fencing tokens, so --fence %s would compare nothing; use --fence none", c.Backend, c.Fence)
	}
	if c.Store != config.DefaultStore {
		k, ok := backends.KeeperOf(c.Store)
		if !ok {
			return config.Usage("unknown store %q (want one of %s)", c.Store, strings.Join(Stores(), ", "))
		}
		if k != b {
			return config.Usage("--store %s keeps the counter in the %s cluster of --backend %s, not with %s", c.Store, c.Store, k.Name(), c.Backend)
		}
	}
	if err := b.Check(c); err != nil {
		return err
	}
	if err := checkLink(c); err != nil {
		return err
	}
	if err := checkVariant(b, c); err != nil {
		return err
	}
	for _, f := range c.Nemesis {
		if f == config.NoFault {
			continue
		}
		if why := backends.Inapplicable(b, c, f); why != "" {
			return config.Usage("nothing for the fault to act on: %s", why)
		}
	}
	if err := checkTarget(b, c); err != nil {
		return err
	}
	return c.CheckTimes()
}

// checkTarget refuses a --target that a fault of the run cannot take (a
// node's shape for a fault that strikes clients, a leader where the
// service has none), or that no fault of the run takes at all.
func checkTarget(b backends.Backend, c *config.Config) error {
	if !c.Faulted() {
		return nil
	}
	taken := false
	for _, f := range c.Nemesis {
		k, _ := nemesis.Lookup(f)
		if k.Targets == nil {
			continue
		}
		if !slices.Contains(k.Targets, c.PauseTarget) {
			return config.Usage("--target %s: %s takes %s", c.PauseTarget, f, strings.Join(k.Targets, ", "))
		}
		taken = true
	}
	if !taken && c.PauseTarget != nemesis.TargetHolder {
		return config.Usage("--target %s: no fault of this run takes a target (%s pick their own)", c.PauseTarget, strings.Join(c.Nemesis, ", "))
	}
	if c.PauseTarget == nemesis.TargetLeader && b.Layout(c).Leader == nil {
		return config.Usage("--target leader: %s has no leader", c.Backend)
	}
	return nil
}

// checkLink fills in the link fault's defaults (every shape, both paths,
// a delay of one TTL) and refuses its settings without the fault.
func checkLink(c *config.Config) error {
	if c.RTT.D() < 0 {
		return config.Usage("--rtt must not be negative, got %s", c.RTT.D())
	}
	if !c.Has(nemesis.LinkFault) {
		if len(c.Link) > 0 || c.LinkPath != "" || c.LinkDelay != 0 {
			return config.Usage("--link, --link-path and --link-delay shape the link fault: add --nemesis %s", nemesis.LinkFault)
		}
		return nil
	}
	if len(c.Link) == 0 {
		c.Link = slices.Clone(link.Shapes)
	}
	for i, s := range c.Link {
		if err := link.CheckShape(s); err != nil {
			return config.Usage("--link: %v", err)
		}
		if slices.Contains(c.Link[:i], s) {
			return config.Usage("--link: %s is asked for twice", s)
		}
	}
	if c.LinkPath == "" {
		c.LinkPath = link.Both
	}
	if err := link.CheckPath(c.LinkPath); err != nil {
		return config.Usage("--link-path: %v", err)
	}
	if c.LinkPath == link.Store && c.Store != config.DefaultStore {
		return config.Usage("--link-path store: with --store %s the lock service keeps the counter, so a client's links to it are the lock path", c.Store)
	}
	if c.LinkDelay == 0 {
		c.LinkDelay = c.TTL
	}
	if c.LinkDelay.D() < 0 {
		return config.Usage("--link-delay must be positive, got %s", c.LinkDelay.D())
	}
	return nil
}

// Warnings say where a valid configuration is weak: legal, but unlikely to
// show what its faults are there for.
func Warnings(c *config.Config) []string {
	if !c.Faulted() {
		return nil
	}
	var w []string
	if c.NemesisInterval.D() >= c.TimeLimit.D() {
		w = append(w, fmt.Sprintf("--nemesis-interval %s is not shorter than --time-limit %s: the first fault comes after %s to %s, so the run may see one fault or none",
			c.NemesisInterval.D(), c.TimeLimit.D(), c.NemesisInterval.D()/2, 3*c.NemesisInterval.D()/2))
	}
	for _, k := range nemesis.Kinds {
		if k.Outlived && c.Has(k.Name) && c.FaultDuration.D() < c.TTL.D() {
			w = append(w, fmt.Sprintf("%s lasts %s, less than the %s TTL: a lease frozen or cut off for less than its TTL outlives the fault, so it can rarely if ever make two holders",
				k.Name, c.FaultDuration.D(), c.TTL.D()))
		}
	}
	return w
}

// checkVariant refuses a client variant, or a failpoint, that the
// backend's clients do not have, and a failpoint no fault asked for acts
// on.
func checkVariant(b backends.Backend, c *config.Config) error {
	if !backends.HasVariant(b, c.Variant) {
		var names []string
		for _, v := range backends.VariantsOf(b) {
			names = append(names, v.Name)
		}
		return config.Usage("--backend %s has no client variant %q (want one of %s)", c.Backend, c.Variant, strings.Join(names, ", "))
	}
	if c.Variant != config.Correct && c.Store != config.DefaultStore {
		return config.Usage("--variant %s is judged on the lockbench store; --store %s writes through the correct client's ownership", c.Variant, c.Store)
	}
	if c.Failpoint == "" {
		return nil
	}
	points := backends.FailpointsOf(b)
	if !slices.Contains(points, c.Failpoint) {
		if len(points) == 0 {
			return config.Usage("--backend %s takes no lock: its clients pass no failpoint", c.Backend)
		}
		return config.Usage("--backend %s's clients pass no failpoint %q (want one of %s)", c.Backend, c.Failpoint, strings.Join(points, ", "))
	}
	for _, k := range nemesis.Kinds {
		if k.Strikes && c.Has(k.Name) {
			return nil
		}
	}
	var strikers []string
	for _, k := range nemesis.Kinds {
		if k.Strikes {
			strikers = append(strikers, k.Name)
		}
	}
	return config.Usage("--failpoint %s needs a fault that strikes a client there: %s", c.Failpoint, strings.Join(strikers, " or "))
}
