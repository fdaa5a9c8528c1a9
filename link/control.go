package link

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"
)

// toxic is what one shape adds to each proxy it strikes. Delays are in
// milliseconds, as Toxiproxy's attributes are.
func toxic(shape string, delay time.Duration) (typ, stream string, attrs toxiclient.Attributes, err error) {
	ms := delay.Milliseconds()
	switch shape {
	case Delay:
		// Requests, not replies, are held: a request that lands late is
		// the case that decides arguments (a write after its lease), and
		// its reply is late by as much.
		return "latency", "upstream", toxiclient.Attributes{"latency": ms, "jitter": ms / 2}, nil
	case ReplyLost:
		// A timeout toxic of 0 drops what the server sends and never
		// closes; removing it closes every connection it starved
		// (Toxiproxy's cleanup of the timeout toxic), which is the reset
		// that follows a lost reply.
		return "timeout", "downstream", toxiclient.Attributes{"timeout": 0}, nil
	case Reset:
		// On the replies: the request is delivered and may be applied,
		// and the client reads a reset where its reply was, as a client
		// whose server or middlebox drops its connection mid-request does.
		return "reset_peer", "downstream", toxiclient.Attributes{"timeout": 0}, nil
	case SlowClose:
		return "slow_close", "downstream", toxiclient.Attributes{"delay": ms}, nil
	}
	return "", "", nil, fmt.Errorf("link shape %q is not made by the proxies", shape)
}

// Set strikes every proxy on path with shape, through the API at api (a
// worker's APIAddr), and returns the servers struck. delay is the delay
// of Delay and SlowClose.
func Set(api, shape, path string, delay time.Duration) ([]string, error) {
	typ, stream, attrs, err := toxic(shape, delay)
	if err != nil {
		return nil, err
	}
	c := toxiclient.NewClient(api)
	proxies, err := c.Proxies()
	if err != nil {
		return nil, fmt.Errorf("link proxies: %w", err)
	}
	var struck []string
	for _, n := range sorted(proxies) {
		if !on(path, pathOf(n)) {
			continue
		}
		if _, err := proxies[n].AddToxic(faultPrefix+shape, typ, stream, 1, attrs); err != nil {
			return struck, fmt.Errorf("link %s: %s: %w", n, shape, err)
		}
		struck = append(struck, proxies[n].Upstream)
	}
	if len(struck) == 0 {
		return nil, fmt.Errorf("%w: %s (the client dials no server there)", ErrNoPath, path)
	}
	return struck, nil
}

// Clear removes every fault's toxic from every proxy; the steady round
// trip stays. It is safe to call at any time, any number of times.
func Clear(api string) error {
	c := toxiclient.NewClient(api)
	proxies, err := c.Proxies()
	if err != nil {
		return fmt.Errorf("link proxies: %w", err)
	}
	for _, n := range sorted(proxies) {
		ts, err := proxies[n].Toxics()
		if err != nil {
			return fmt.Errorf("link %s: %w", n, err)
		}
		for _, t := range ts {
			if strings.HasPrefix(t.Name, faultPrefix) {
				if err := proxies[n].RemoveToxic(t.Name); err != nil {
					return fmt.Errorf("link %s: heal %s: %w", n, t.Name, err)
				}
			}
		}
	}
	// A heal is proven by reading the proxies back, not assumed.
	shown, err := Show(api)
	if err != nil {
		return err
	}
	if strings.Contains(shown, faultPrefix) {
		return fmt.Errorf("link faults left after the heal:\n%s", shown)
	}
	return nil
}

// Show says, one line per proxy, which server it stands for and which
// toxics it has: what the nemesis reads back to prove a fault set or healed.
func Show(api string) (string, error) {
	c := toxiclient.NewClient(api)
	proxies, err := c.Proxies()
	if err != nil {
		return "", fmt.Errorf("link proxies: %w", err)
	}
	var b strings.Builder
	for _, n := range sorted(proxies) {
		ts, err := proxies[n].Toxics()
		if err != nil {
			return "", fmt.Errorf("link %s: %w", n, err)
		}
		var names []string
		for _, t := range ts {
			names = append(names, fmt.Sprintf("%s(%s %s %v)", t.Name, t.Type, t.Stream, t.Attributes))
		}
		slices.Sort(names)
		fmt.Fprintf(&b, "%s %s → %s: %s\n", pathOf(n), proxies[n].Listen, proxies[n].Upstream, strings.Join(names, " "))
	}
	return b.String(), nil
}

func sorted(m map[string]*toxiclient.Proxy) []string { return slices.Sorted(maps.Keys(m)) }
