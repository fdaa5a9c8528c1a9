package link

import (
	"bufio"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// server answers each line with the same line and keeps what it received,
// so that a test can tell a request applied from a reply received. With
// closeAfter it closes each connection after its first answer.
type server struct {
	l          net.Listener
	closeAfter bool
	mu         sync.Mutex
	got        []string
}

func newServer(t *testing.T, closeAfter bool) *server {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &server{l: l, closeAfter: closeAfter}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					s.mu.Lock()
					s.got = append(s.got, strings.TrimSpace(line))
					s.mu.Unlock()
					if _, err := io.WriteString(c, line); err != nil || s.closeAfter {
						return
					}
				}
			}()
		}
	}()
	return s
}

func (s *server) received(line string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range s.got {
		if g == line {
			return true
		}
	}
	return false
}

// roundTrip sends line and waits up to wait for its echo.
func roundTrip(c net.Conn, line string, wait time.Duration) (time.Duration, error) {
	start := time.Now()
	if _, err := io.WriteString(c, line+"\n"); err != nil {
		return 0, err
	}
	c.SetReadDeadline(time.Now().Add(wait))
	got, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return time.Since(start), err
	}
	if strings.TrimSpace(got) != line {
		return time.Since(start), errors.New("wrong echo " + got)
	}
	return time.Since(start), nil
}

func start(t *testing.T, rtt time.Duration) *Proxies {
	t.Helper()
	p, err := Start("127.0.0.1:0", rtt)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func dial(t *testing.T, p *Proxies, path, addr string) net.Conn {
	t.Helper()
	to, err := p.Route(path, addr)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", to)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Each shape is set through the API as the nemesis sets it, seen at work
// on a connection, and healed.
func TestShapes(t *testing.T) {
	p := start(t, 0)
	lockSrv, storeSrv := newServer(t, false), newServer(t, false)
	lockConn := dial(t, p, Lock, lockSrv.l.Addr().String())
	storeConn := dial(t, p, Store, storeSrv.l.Addr().String())
	if d, err := roundTrip(storeConn, "before", time.Second); err != nil || d > 100*time.Millisecond {
		t.Fatalf("no fault: %v after %v", err, d)
	}

	t.Run("delay on the store path only", func(t *testing.T) {
		struck, err := Set(p.API, Delay, Store, 400*time.Millisecond)
		if err != nil || len(struck) != 1 || struck[0] != storeSrv.l.Addr().String() {
			t.Fatalf("set: %v %v", struck, err)
		}
		shown, err := Show(p.API)
		if err != nil || !strings.Contains(shown, "fault-delay(latency upstream") {
			t.Fatalf("show: %q %v", shown, err)
		}
		if d, err := roundTrip(storeConn, "slow", 2*time.Second); err != nil || d < 200*time.Millisecond {
			t.Errorf("store path: %v after %v, want at least 200ms", err, d)
		}
		if d, err := roundTrip(lockConn, "fast", time.Second); err != nil || d > 150*time.Millisecond {
			t.Errorf("lock path: %v after %v, want no delay", err, d)
		}
		if err := Clear(p.API); err != nil {
			t.Fatal(err)
		}
		if d, err := roundTrip(storeConn, "healed", time.Second); err != nil || d > 100*time.Millisecond {
			t.Errorf("healed: %v after %v", err, d)
		}
	})

	t.Run("reply lost: applied, unanswered, then reset", func(t *testing.T) {
		c := dial(t, p, Store, storeSrv.l.Addr().String())
		if _, err := Set(p.API, ReplyLost, Both, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := roundTrip(c, "applied", 300*time.Millisecond); !isTimeout(err) {
			t.Fatalf("reply came back: %v", err)
		}
		if !storeSrv.received("applied") {
			t.Fatal("the request was not delivered")
		}
		if err := Clear(p.API); err != nil {
			t.Fatal(err)
		}
		// The starved connection is closed, never resumed.
		c.SetReadDeadline(time.Now().Add(time.Second))
		if _, err := c.Read(make([]byte, 64)); err == nil || isTimeout(err) {
			t.Errorf("starved connection after heal: %v, want it closed", err)
		}
		if _, err := roundTrip(dial(t, p, Store, storeSrv.l.Addr().String()), "new", time.Second); err != nil {
			t.Errorf("new connection after heal: %v", err)
		}
	})

	t.Run("reset", func(t *testing.T) {
		open := dial(t, p, Lock, lockSrv.l.Addr().String())
		if _, err := roundTrip(open, "warm", time.Second); err != nil {
			t.Fatal(err)
		}
		if _, err := Set(p.API, Reset, Lock, 0); err != nil {
			t.Fatal(err)
		}
		// Toxiproxy makes its close a reset on connections opened while
		// the shape is set; one already open is closed (EOF) instead.
		if _, err := roundTrip(open, "closed", time.Second); !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("open connection: got %v, want it closed", err)
		}
		if _, err := roundTrip(dial(t, p, Lock, lockSrv.l.Addr().String()), "reset", time.Second); !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("new connection: got %v, want a connection reset", err)
		}
		if !lockSrv.received("reset") {
			t.Error("the request was not delivered before the reset")
		}
		if err := Clear(p.API); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("slow close", func(t *testing.T) {
		closing := newServer(t, true)
		c := dial(t, p, Lock, closing.l.Addr().String())
		if _, err := Set(p.API, SlowClose, Lock, 400*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if _, err := roundTrip(c, "bye", time.Second); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Read(make([]byte, 8)); !errors.Is(err, io.EOF) {
			t.Fatalf("got %v, want the close", err)
		}
		if d := time.Since(start); d < 350*time.Millisecond {
			t.Errorf("closed after %v, want at least 400ms", d)
		}
		if err := Clear(p.API); err != nil {
			t.Fatal(err)
		}
	})

	shown, err := Show(p.API)
	if err != nil || strings.Contains(shown, faultPrefix) {
		t.Errorf("after every heal: %q %v", shown, err)
	}
	if _, err := Set(p.API, Loss, Both, 0); err == nil {
		t.Error("loss is not the proxies' to make, but Set took it")
	}
}

func TestNoPath(t *testing.T) {
	p := start(t, 0)
	srv := newServer(t, false)
	dial(t, p, Lock, srv.l.Addr().String())
	if _, err := Set(p.API, Delay, Store, time.Second); !errors.Is(err, ErrNoPath) {
		t.Errorf("got %v, want ErrNoPath", err)
	}
}

// A steady round trip is on every link from its first byte, through a
// dialer as through a route, and no heal takes it away.
func TestRTT(t *testing.T) {
	p := start(t, 300*time.Millisecond)
	srv := newServer(t, false)
	c, err := p.Dialer(Lock)(t.Context(), "tcp", srv.l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if d, err := roundTrip(c, "far", 2*time.Second); err != nil || d < 280*time.Millisecond {
		t.Errorf("round trip %v (%v), want at least 300ms", d, err)
	}
	if err := Clear(p.API); err != nil {
		t.Fatal(err)
	}
	if d, err := roundTrip(c, "still far", 2*time.Second); err != nil || d < 280*time.Millisecond {
		t.Errorf("after Clear: round trip %v (%v), want at least 300ms", d, err)
	}
	if to, _ := p.Route(Lock, srv.l.Addr().String()); to != c.RemoteAddr().String() {
		t.Errorf("a second route made another proxy: %s, dialed %s", to, c.RemoteAddr())
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
