package locks

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"testing"
)

// frame is a ZooKeeper frame: its length, then body.
func frame(body ...int32) []byte {
	b := make([]byte, 4+4*len(body))
	binary.BigEndian.PutUint32(b, uint32(4*len(body)))
	for i, v := range body {
		binary.BigEndian.PutUint32(b[4+4*i:], uint32(v))
	}
	return b
}

// reply is a reply frame: xid, a zxid of two words, the error code.
func reply(xid, code int32) []byte { return frame(xid, 0, 7, code) }

// TestTapLosesTheCreatesReply drives a tapped connection as go-zookeeper
// does: the handshake each way, then requests and replies. Only the reply
// to the contender's create, applied, with the client held at the
// failpoint, is lost; every other frame reads through whole.
func TestTapLosesTheCreatesReply(t *testing.T) {
	for _, c := range []struct {
		name   string
		expect bool  // the create is the contender's
		code   int32 // the reply's error code
		held   bool  // the failpoint holds
		lost   bool
	}{
		{"held", true, 0, true, true},
		{"not armed", true, 0, false, false},
		{"not the contender's create", false, 0, true, false},
		{"create refused", true, -110, true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			client, server := net.Pipe()
			defer server.Close()
			var asked []string
			tap := &zkTap{fp: func(p string) bool { asked = append(asked, p); return c.held }}
			conn := &tapConn{Conn: client, tap: tap}
			go func() {
				// The handshake, a ping, the create, then the replies.
				for range 3 {
					buf := make([]byte, 64)
					if _, err := server.Read(buf); err != nil {
						return
					}
				}
				for _, f := range [][]byte{frame(1, 2, 3), reply(-2, 0), reply(5, c.code), reply(6, 0)} {
					if _, err := server.Write(f); err != nil {
						return
					}
				}
			}()
			if c.expect {
				tap.expectCreate()
			}
			for _, f := range [][]byte{frame(0, 0, 0), frame(-2, 11), frame(5, zkOpCreate, 9)} {
				if _, err := conn.Write(f); err != nil {
					t.Fatal(err)
				}
			}
			for i, want := range [][]byte{frame(1, 2, 3), reply(-2, 0), reply(5, c.code), reply(6, 0)} {
				got := make([]byte, len(want))
				// As the library reads: the length, then the body.
				_, err := io.ReadFull(conn, got[:4])
				if err == nil {
					_, err = io.ReadFull(conn, got[4:])
				}
				if i == 2 && c.lost {
					if !errors.Is(err, errReplyLost) {
						t.Fatalf("the create's reply read as %x, %v: want it lost", got, err)
					}
					if len(asked) != 1 || asked[0] != FailReplyHeld {
						t.Errorf("failpoints asked: %v", asked)
					}
					return
				}
				if err != nil || string(got) != string(want) {
					t.Fatalf("frame %d read as %x, %v: want %x", i, got, err, want)
				}
			}
			if wantAsked := c.expect && c.code == 0; (len(asked) == 1) != wantAsked {
				t.Errorf("failpoints asked: %v, want one: %v", asked, wantAsked)
			}
		})
	}
}
