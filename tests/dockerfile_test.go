package tests

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// deploy/Dockerfile.multistage builds from source for users who can pull
// golang, which CI cannot: its final stage must say what the tested
// Dockerfile's says (labels, environment, user, volume, ports, health
// check, entrypoint), copying the same two things, the binary as root's and
// /data as 65532's. Only where they come from differs.
func TestMultistageDockerfileMatchesTheTestedOne(t *testing.T) {
	tested := finalStage(t, "Dockerfile")
	multi := finalStage(t, filepath.Join("deploy", "Dockerfile.multistage"))
	rest := func(stage []string) (copies, others []string) {
		for _, in := range stage {
			switch {
			case strings.HasPrefix(in, "COPY "):
				copies = append(copies, in)
			case in == "ARG TARGETPLATFORM": // where the tested one finds the binary
			default:
				others = append(others, in)
			}
		}
		return copies, others
	}
	testedCopies, testedRest := rest(tested)
	multiCopies, multiRest := rest(multi)
	if !slices.Equal(testedRest, multiRest) {
		t.Errorf("the final stages differ beyond COPY:\nDockerfile:\n  %s\ndeploy/Dockerfile.multistage:\n  %s",
			strings.Join(testedRest, "\n  "), strings.Join(multiRest, "\n  "))
	}
	for name, copies := range map[string][]string{"Dockerfile": testedCopies, "deploy/Dockerfile.multistage": multiCopies} {
		if len(copies) != 2 || !strings.HasSuffix(copies[0], " /rlserver") || strings.Contains(copies[0], "--chown") ||
			!strings.HasSuffix(copies[1], " /data/") || !strings.Contains(copies[1], "--chown=65532:65532 ") {
			t.Errorf("%s copies %q: want the binary to /rlserver (root's), then data/ to /data/ with --chown=65532:65532", name, copies)
		}
	}
}

// finalStage returns the instructions after a Dockerfile's last FROM, one
// string each: continuation lines joined, comments dropped, white space
// collapsed.
func finalStage(t *testing.T, path string) []string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	var instructions []string
	var current strings.Builder
	for _, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "#") || (trimmed == "" && current.Len() == 0) {
			continue
		}
		current.WriteString(strings.TrimSuffix(trimmed, "\\") + " ")
		if !strings.HasSuffix(trimmed, "\\") {
			instructions = append(instructions, strings.Join(strings.Fields(current.String()), " "))
			current.Reset()
		}
	}
	last := -1
	for i, in := range instructions {
		if strings.HasPrefix(in, "FROM ") {
			last = i
		}
	}
	if last < 0 {
		t.Fatalf("%s: no FROM", path)
	}
	return instructions[last+1:]
}
