package e2e

import (
	"net/http"
	"sync"
	"testing"

	"github.com/queuehq/queue/internal/openapitest"
)

// Every answer the tests get from a `queue serve` they started (through
// client, call and http.Get) is checked against the OpenAPI document the
// binary serves (embed/openapi.json): a mismatch fails the test that
// started the server. Requests to anything else (a webhook receiver, a
// collector) are not checked.
func init() {
	t := &openapitest.Transport{Base: http.DefaultTransport, Only: openapiServers.watched, Fail: openapiServers.fail}
	client.Transport = t
	http.DefaultClient.Transport = t
}

// openapiServers maps the address of each running `queue serve` to its test.
var openapiServers = &serverTests{by: map[string]*serverTest{}}

type serverTests struct {
	mu sync.Mutex
	by map[string]*serverTest
}

// serverTest is a test that started a server; once it ends (done) a late
// answer is no longer reported to it.
type serverTest struct {
	mu   sync.Mutex
	t    testing.TB
	done bool
	seen map[string]int // answers per method and path
}

// sampleAfter is how many answers to one method and path of one server are
// all checked; past it, one in sampleEvery is. A check takes milliseconds
// (kin-openapi compiles a JSON Schema 2020-12 validator for each), so
// checking every answer of the tests that measure how many submissions a
// server takes in a second would measure the checker instead; a thousand
// answers of one route add no shape the first ones did not show.
const (
	sampleAfter = 20
	sampleEvery = 100
)

// watchOpenAPI checks the answers of the server on addr for t, until t ends.
func watchOpenAPI(t testing.TB, addr string) {
	st := &serverTest{t: t}
	openapiServers.mu.Lock()
	openapiServers.by[addr] = st
	openapiServers.mu.Unlock()
	t.Cleanup(func() {
		st.mu.Lock()
		st.done = true
		st.mu.Unlock()
		openapiServers.mu.Lock()
		if openapiServers.by[addr] == st {
			delete(openapiServers.by, addr)
		}
		openapiServers.mu.Unlock()
	})
}

func (s *serverTests) test(req *http.Request) *serverTest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.by[req.URL.Host]
}

func (s *serverTests) watched(req *http.Request) bool {
	st := s.test(req)
	if st == nil {
		return false
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.seen == nil {
		st.seen = map[string]int{}
	}
	k := req.Method + " " + req.URL.Path
	st.seen[k]++
	n := st.seen[k]
	return n <= sampleAfter || n%sampleEvery == 0
}

func (s *serverTests) fail(req *http.Request, err error) {
	st := s.test(req)
	if st == nil {
		return
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.done {
		st.t.Errorf("OpenAPI: %v", err)
	}
}
