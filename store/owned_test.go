package store

import (
	"bytes"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lockbench/lockbench/jsonl/jsonltest"
)

// sameAsCopying holds ReadLog, whose strings are decoded without copies and
// then owned, to what decoding with copies makes of data: the same
// entries, the same error.
func sameAsCopying(t *testing.T, data []byte) {
	t.Helper()
	got, gotErr := ReadLog(bytes.NewReader(data))
	want, wantErr := readLog(bytes.NewReader(data), nil)
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		t.Fatalf("%q:\nerror %v\nwant  %v", data, gotErr, wantErr)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\nread %+v\nwant %+v", data, got, want)
	}
}

// ownStrings leaves no string of an entry in the memory it was decoded
// from, which jsonl reuses for the next block; the template sets every field.
func TestOwnStringsOwnsEveryString(t *testing.T) {
	e := Entry{Seq: 1, Time: 1, Req: "c1-1", Client: "c1", Op: "write", Key: "x", Token: 1, Value: 1, Set: []int64{1},
		Prev: 1, Outcome: Rejected, MaxToken: 2, Reason: "stale token"}
	jsonltest.OwnsEveryString(t, e, ownStrings)
}

// Lines that the decoder must judge the same whoever owns their strings,
// as the only line, as the last one and as one in the middle.
func TestReadLogWithoutCopiesJudgesAsBefore(t *testing.T) {
	const ok = `{"seq":9,"time":9,"req":"r9","client":"c9","op":"read","key":"x","value":0,"prev":0,"outcome":"accepted"}`
	lines := []string{
		`{"seq":0,"time":1,"req":"c\u0031-1","client":"c\"1","op":"wr\/ite","outcome":"accepted"}`,
		`{"seq":0,"time":1,"req":"r","op":"read","outcome":"rejected","reason":"a\nb\u00e9\ud83d\ude00 \ud800 é"}`,
		`{"seq":0,"time":1,"req":"r\x1","op":"read","outcome":"accepted"}`,
		"{\"seq\":0,\"time\":1,\"req\":\"r\xff\",\"op\":\"read\",\"outcome\":\"accepted\"}",
		"{\"seq\":0,\"time\":1,\"req\":\"r\t\",\"op\":\"read\",\"outcome\":\"accepted\"}",
		`{"seq":0,"time":1e3,"req":"r","op":"read","outcome":"accepted","value":1.0,"prev":01}`,
		`{"seq":-0,"time":9223372036854775808,"req":"r","op":"read","outcome":"accepted"}`,
		`{"seq":0,"time":null,"req":null,"op":"read","outcome":"accepted","set":null,"value":null}`,
		`{"seq":0,"time":1,"req":"r","req":"s","op":"read","op":"write","outcome":"accepted","set":[1],"set":[2,3]}`,
		`{"seq":0,"time":1,"Req":"r","OP":"read","outcome":"accepted","foo":{"a":[1,"x",null]}}`,
		` { "seq" : 0 ,	"time" : 1 , "req" : "r" , "op" : "read" , "outcome" : "accepted" } `,
		`{"seq":0,"time":1,"req":"r","op":"read","outcome":"accepted"}x`,
		`{"seq":0,"time":"1","req":1,"op":"read","outcome":"accepted","set":[1,"a"]}`,
		`null`, `[]`, `"s"`, `1`, `{}`,
	}
	for _, l := range lines {
		sameAsCopying(t, []byte(l))
		sameAsCopying(t, []byte(ok+"\n"+l))
		sameAsCopying(t, []byte(strings.Replace(ok, `"seq":9`, `"seq":-9`, 1)+"\n"+l+"\n"+ok+"\n"))
	}
}

// The fuzz corpus and the golden logs decode as with copies.
func TestReadLogCorpusJudgedAsBefore(t *testing.T) {
	for _, data := range jsonltest.FuzzSeeds(t, "FuzzReadLog") {
		sameAsCopying(t, data)
	}
	for _, data := range jsonltest.Files(t, filepath.Join("..", "checkers", "testdata", "*", "store.log")) {
		sameAsCopying(t, data)
	}
}
