package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// The scripts in testdata/script run the real command line: `queue` in a
// script is this binary's main.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){"queue": main})
}

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return err
			}
			addr := ln.Addr().String()
			ln.Close()
			env.Setenv("ADDR", addr)
			env.Setenv("QUEUE_SERVER", "http://"+addr)
			env.Setenv("QUEUE_LOG_FORMAT", "json")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			// waitready waits up to 10s for the server's /readyz.
			"waitready": func(ts *testscript.TestScript, neg bool, args []string) {
				url := ts.Getenv("QUEUE_SERVER") + "/readyz"
				for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
					if resp, err := http.Get(url); err == nil {
						resp.Body.Close()
						if resp.StatusCode == 200 {
							return
						}
					}
				}
				ts.Fatalf("server not ready at %s", url)
			},
			// api METHOD PATH [BODY] calls the server and prints the answer;
			// it fails on a status >= 400 unless negated.
			"api": func(ts *testscript.TestScript, neg bool, args []string) {
				if len(args) < 2 {
					ts.Fatalf("usage: api METHOD PATH [BODY]")
				}
				var body io.Reader
				if len(args) > 2 {
					body = strings.NewReader(args[2])
				}
				req, _ := http.NewRequest(args[0], ts.Getenv("QUEUE_SERVER")+args[1], body)
				if body != nil {
					req.Header.Set("Content-Type", "application/json")
				}
				resp, err := http.DefaultClient.Do(req)
				ts.Check(err)
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				fmt.Fprintf(ts.Stdout(), "%d %s\n", resp.StatusCode, b)
				if (resp.StatusCode >= 400) != neg {
					ts.Fatalf("%s %s: %d %s", args[0], args[1], resp.StatusCode, b)
				}
			},
		},
	})
}

var _ = os.Exit
