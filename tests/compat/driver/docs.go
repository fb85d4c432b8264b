package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// A snippet is a code block of docs/clients.md run as a test. It follows a
// marker line
//
//	<!-- compat: NAME MODE want: REGEXP -->
//
// MODE is single (the open node), single-auth (the node with a password)
// or cluster (the open cluster). Before it runs, the documented addresses
// are replaced with the test servers': port 6380 with the node's, 6381 to
// 6383 with the cluster nodes', and the password s3cret with the test
// password. It must exit 0 and print something REGEXP matches. The fence's
// language says how it runs: go (go run, with the repository's go.mod),
// python (/usr/bin/python3), js (node, in tests/compat/node), sh (bash).
type snippet struct {
	name, mode, lang, code string
	want                   *regexp.Regexp
	line                   int
}

var markerLine = regexp.MustCompile(`^<!-- compat: (\S+) (single|single-auth|cluster) want: (.*) -->$`)

// docsSnippets reads the snippets of the file.
func docsSnippets(path string) ([]snippet, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []snippet
	var cur *snippet
	inCode := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && !inCode:
			if m := markerLine.FindStringSubmatch(line); m != nil {
				want, err := regexp.Compile(m[3])
				if err != nil {
					return nil, fmt.Errorf("%s:%d: %v", path, n, err)
				}
				cur = &snippet{name: m[1], mode: m[2], want: want, line: n}
			}
		case cur != nil && !inCode:
			if lang, ok := strings.CutPrefix(line, "```"); ok && lang != "" {
				cur.lang, inCode = lang, true
			} else if strings.TrimSpace(line) != "" {
				return nil, fmt.Errorf("%s:%d: a compat marker must be followed by a code block", path, cur.line)
			}
		case inCode:
			if line == "```" {
				out = append(out, *cur)
				cur, inCode = nil, false
			} else {
				cur.code += line + "\n"
			}
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: unterminated snippet", path, cur.line)
	}
	return out, sc.Err()
}

// runSnippets runs the snippets of mode's family ("single" runs single and
// single-auth) against the given servers.
func runSnippets(family string, single, singleAuth *server, cl *cluster) []result {
	path := filepath.Join(*compatDir, "..", "..", "docs", "clients.md")
	snippets, err := docsSnippets(path)
	if err != nil {
		return []result{{client: "docs/clients.md", mode: family, name: "(read)", status: statusFail, detail: err.Error()}}
	}
	var results []result
	for _, s := range snippets {
		if !strings.HasPrefix(s.mode, family) {
			continue
		}
		var repl []string
		switch s.mode {
		case "single":
			repl = []string{"6380", portOf(single.Addr)}
		case "single-auth":
			repl = []string{"6380", portOf(singleAuth.Addr), "s3cret", password}
		case "cluster":
			for i, n := range cl.Nodes {
				repl = append(repl, fmt.Sprint(6381+i), portOf(n.Addr))
			}
		}
		code := strings.NewReplacer(repl...).Replace(s.code)
		start := time.Now()
		out, err := runSnippet(s, code)
		r := result{client: "docs/clients.md", version: "-", mode: family, name: s.name}
		switch {
		case err != nil:
			r.status, r.detail = statusFail, fmt.Sprintf("line %d: %v; output %q", s.line, err, out)
		case !s.want.MatchString(out):
			r.status, r.detail = statusFail, fmt.Sprintf("line %d printed %q, want a match of %q", s.line, out, s.want)
		default:
			r.status, r.detail = statusPass, fmt.Sprintf("line %d, %s, %.1fs: %s", s.line, s.lang, time.Since(start).Seconds(), strings.TrimSpace(out))
		}
		r.detail = strings.Join(strings.Fields(r.detail), " ")
		logf("  %-9s %-8s %-10s %-8s %-18s %s", r.status, r.client, r.version, r.mode, r.name, r.detail)
		results = append(results, r)
	}
	return results
}

func portOf(addr string) string {
	_, p := splitAddr(addr)
	return p
}

// runSnippet runs code in the snippet's language and returns its output.
func runSnippet(s snippet, code string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), toolTimeout)
	defer cancel()
	tmp, err := os.MkdirTemp("", "rlserver-snippet-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	root := filepath.Join(*compatDir, "..", "..")
	var cmd *exec.Cmd
	switch s.lang {
	case "go":
		// A package that exists only in an overlay, inside the module, so
		// that the snippet builds with the repository's go.mod.
		file := filepath.Join(tmp, "main.go")
		if err := os.WriteFile(file, []byte(code), 0o644); err != nil {
			return "", err
		}
		virtual := filepath.Join(*compatDir, "snippet_"+s.name, "main.go")
		overlay, _ := json.Marshal(map[string]map[string]string{"Replace": {virtual: file}})
		ov := filepath.Join(tmp, "overlay.json")
		if err := os.WriteFile(ov, overlay, 0o644); err != nil {
			return "", err
		}
		cmd = exec.CommandContext(ctx, "go", "run", "-overlay", ov, "./"+filepath.Join("tests", "compat", "snippet_"+s.name))
		cmd.Dir = root
	case "python":
		cmd = exec.CommandContext(ctx, *python, "-c", code)
	case "js":
		cmd = exec.CommandContext(ctx, *nodeBin, "-")
		cmd.Dir = filepath.Join(*compatDir, "node")
		cmd.Stdin = strings.NewReader(code)
	case "sh":
		cmd = exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", code)
	default:
		return "", fmt.Errorf("no way to run a %q block", s.lang)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("killed after %v", toolTimeout)
	}
	return out.String(), err
}
