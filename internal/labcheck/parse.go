// Package labcheck checks the labs of docs/labs: it reads a lab's fenced
// blocks, starts the cluster the lab starts, runs the lab's commands as a
// student would, and compares what they print, and what the timeline
// shows, with what the lab says they print. A lab whose answer stops
// being true fails.
//
// A lab is Markdown. Its fenced blocks that the checker reads are:
//
//	```sh serve                 the csisim serve command line (one per lab, first);
//	                            it must write --kubeconfig FILE, a relative path;
//	                            a document without one has its commands run alone
//	```sh [timeout=D]           commands, run with bash -e -o pipefail in one
//	                            directory with KUBECONFIG set; they must succeed,
//	                            within D (default Config.CommandTimeout)
//	```sh ci                    commands CI runs itself, each a stage of its
//	                            script (.ci/run): checked to be there, not run
//	```text expected [within=D] what the sh block just before prints; with within,
//	                            the block is run again (also when it fails) until
//	                            it does, for up to D
//	```text timeline [within=D] lines the serve timeline shows, in order, since the
//	                            first command after the previous timeline block,
//	                            each a part of one line, " ... " standing for anything
//	                            and runs of spaces for one (default within=10s)
//
// Every other block (yaml, console...) is only shown. The same blocks in
// any other document (README.md, docs/) are checked the same way: one
// without a serve block has its commands run alone, in a directory the
// repository is linked into (Config.RepoDir).
package labcheck

import (
	"bufio"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// Kind is what a block is for.
type Kind string

const (
	// Serve starts the lab's cluster.
	Serve Kind = "serve"
	// Run is a block of commands.
	Run Kind = "run"
	// Expected is the output of the Run block before it.
	Expected Kind = "expected"
	// Timeline lists lines the serve timeline must show.
	Timeline Kind = "timeline"
	// CI is a block of commands that CI runs as its stages.
	CI Kind = "ci"
)

// Block is one fenced block the checker reads.
type Block struct {
	Kind Kind
	// Line is the line of the opening fence, for messages.
	Line int
	Text string
	// Within is how long an expected output or timeline may take to come
	// true; 0 means at once (for timelines: the default).
	Within time.Duration
	// Timeout bounds one run of a command block that takes longer than
	// most (one that compiles a Go module); 0: Config.CommandTimeout.
	Timeout time.Duration
}

// Step is a command block with the output the lab says it prints (if it
// says), or a timeline check (Run is then nil).
type Step struct {
	Run      *Block
	Expected *Block
	Timeline *Block
}

// Lab is a parsed lab.
type Lab struct {
	File  string
	Serve Block
	Steps []Step
	// CI are the blocks of commands CI runs itself.
	CI []Block
}

// DefaultTimelineWithin is how long a timeline check waits for its lines
// by default: they are printed as the writes happen, a moment after the
// command that caused them returns.
const DefaultTimelineWithin = 10 * time.Second

// ParseFile reads the lab at path.
func ParseFile(path string) (*Lab, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading lab: %w", err)
	}
	return Parse(path, string(data))
}

// Parse reads a lab's checked blocks; errors name the file and line.
func Parse(file, text string) (*Lab, error) {
	lab := &Lab{File: file}
	var blocks []Block
	var open *Block // the block being read, nil outside checked blocks
	inOther := false
	fence := ""
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case (open != nil || inOther) && strings.TrimSpace(line) == fence:
			if open != nil {
				blocks = append(blocks, *open)
			}
			open, inOther = nil, false
		case open != nil:
			open.Text += line + "\n"
		case inOther:
		case strings.HasPrefix(line, "```"):
			fence = "```"
			b, checked, err := openBlock(strings.Fields(strings.TrimPrefix(line, fence)))
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %w", file, n, err)
			}
			if !checked {
				inOther = true
				continue
			}
			b.Line = n
			open = &b
		}
	}
	if open != nil || inOther {
		return nil, fmt.Errorf("%s: a fenced block is not closed", file)
	}
	return lab, lab.steps(blocks)
}

// cutOne returns the value of words' only word, if it is prefix followed
// by a value.
func cutOne(words []string, prefix string) (string, bool) {
	if len(words) != 1 {
		return "", false
	}
	return strings.CutPrefix(words[0], prefix)
}

// openBlock reads a fence's info string: whether the checker reads the
// block, and as what.
func openBlock(info []string) (Block, bool, error) {
	if len(info) == 0 {
		return Block{}, false, nil
	}
	var b Block
	switch lang, words := info[0], info[1:]; {
	case lang == "sh" || lang == "bash":
		b.Kind = Run
		if len(words) > 0 && (words[0] == "serve" || words[0] == string(CI)) {
			b.Kind, words = Kind(words[0]), words[1:]
		}
		if d, ok := cutOne(words, "timeout="); ok && b.Kind == Run {
			var err error
			if b.Timeout, err = time.ParseDuration(d); err != nil {
				return b, false, fmt.Errorf("timeout=%s: %w", d, err)
			}
			words = nil
		}
		if len(words) > 0 {
			return b, false, fmt.Errorf("a %s block takes no %q", lang, strings.Join(words, " "))
		}
	case lang == "text" && len(words) > 0 && (words[0] == string(Expected) || words[0] == string(Timeline)):
		b.Kind = Kind(words[0])
		for _, w := range words[1:] {
			d, ok := strings.CutPrefix(w, "within=")
			if !ok {
				return b, false, fmt.Errorf("a %s block takes within=DURATION, not %q", b.Kind, w)
			}
			var err error
			if b.Within, err = time.ParseDuration(d); err != nil {
				return b, false, fmt.Errorf("within=%s: %w", d, err)
			}
		}
	default:
		return b, false, nil
	}
	return b, true, nil
}

// steps pairs command blocks with their expected outputs.
func (lab *Lab) steps(blocks []Block) error {
	for i, b := range blocks {
		switch {
		case b.Kind == Serve:
			if i != 0 {
				return fmt.Errorf("%s:%d: the serve block must come before every other checked block, once", lab.File, b.Line)
			}
			lab.Serve = b
		case b.Kind == Timeline && blocks[0].Kind != Serve:
			return fmt.Errorf("%s:%d: a timeline block needs the serve block whose timeline it reads (```sh serve, first)", lab.File, b.Line)
		case b.Kind == Run:
			lab.Steps = append(lab.Steps, Step{Run: &blocks[i]})
		case b.Kind == CI:
			lab.CI = append(lab.CI, b)
			// An expected block after it has no command to follow.
			lab.Steps = append(lab.Steps, Step{})
		case b.Kind == Expected:
			last := len(lab.Steps) - 1
			if last < 0 || lab.Steps[last].Run == nil || lab.Steps[last].Expected != nil {
				return fmt.Errorf("%s:%d: an expected block must follow a sh block", lab.File, b.Line)
			}
			lab.Steps[last].Expected = &blocks[i]
		case b.Kind == Timeline:
			if b.Within == 0 {
				blocks[i].Within = DefaultTimelineWithin
			}
			lab.Steps = append(lab.Steps, Step{Timeline: &blocks[i]})
		}
	}
	if len(lab.Steps) == 0 {
		return fmt.Errorf("%s: no commands to check (```sh)", lab.File)
	}
	// The placeholders of ci blocks go: only commands are steps.
	lab.Steps = slices.DeleteFunc(lab.Steps, func(st Step) bool { return st.Run == nil && st.Timeline == nil })
	return nil
}
