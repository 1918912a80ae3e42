package scenarios

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	yaml2 "go.yaml.in/yaml/v2"
)

// YAML syntax errors carry a line number, but neither YAML library gets it
// right on its own. Both keep 0-based marks internally and add 1 only for
// scanner errors, so parser errors come out one line early; and yaml.v3
// prints the line where the enclosing collection starts while yaml.v2 prints
// the line where the parser gave up. yamlSyntaxError combines the two.

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlParserProblems are the messages of the YAML parser (parserc.go), as
// opposed to the scanner: the ones whose line is printed 0-based.
var yamlParserProblems = []string{
	"did not find expected ',' or ']'",
	"did not find expected ',' or '}'",
	"did not find expected '-' indicator",
	"did not find expected <document start>",
	"did not find expected key",
	"did not find expected node content",
	"found duplicate %TAG directive",
	"found duplicate %YAML directive",
	"found incompatible YAML document",
	"found undefined tag handle",
}

// yamlTabProblem is a scanner error that yaml.v3 places on the line before
// the tab; yaml.v2 places it right.
const yamlTabProblem = "found a tab character that violates indentation"

// splitYAMLError returns the line printed in a YAML error (0 if none) and
// the message without the "yaml: line N: " prefix.
func splitYAMLError(err error) (int, string) {
	m := yamlLineRE.FindStringSubmatch(err.Error())
	if m == nil {
		return 0, strings.TrimPrefix(err.Error(), "yaml: ")
	}
	n, _ := strconv.Atoi(m[1])
	return n, m[2]
}

// yamlSyntaxError turns err, a yaml.v3 error from parsing data, into the
// 1-based line of the problem (0 if unknown), the line of the mapping or
// list it is in when that differs (else 0), and the message.
func yamlSyntaxError(data []byte, err error) (line, within int, msg string) {
	line, msg = splitYAMLError(err)
	isParserProblem := slices.Contains(yamlParserProblems, msg)
	if !isParserProblem && msg != yamlTabProblem {
		return line, 0, msg
	}
	if isParserProblem {
		line++ // yaml.v3 printed the collection's 0-based line
	}
	var ignored any
	err2 := yaml2.Unmarshal(data, &ignored)
	if err2 == nil {
		return line, 0, msg
	}
	line2, msg2 := splitYAMLError(err2)
	if line2 == 0 || msg2 != msg {
		return line, 0, msg
	}
	if msg == yamlTabProblem {
		return line2, 0, msg
	}
	problem := line2 + 1 // yaml.v2 printed the problem's 0-based line
	if problem == line {
		return problem, 0, msg
	}
	return problem, line, msg
}

// withinHint says which collection a syntax error is in, when that is on
// another line than the error: the cause is often there (an unclosed
// bracket) or in the indentation between the two.
func withinHint(msg string, within int) string {
	switch {
	case within == 0:
		return ""
	case strings.HasSuffix(msg, "'}'"):
		return fmt.Sprintf(" (in the {...} that starts at line %d)", within)
	case strings.HasSuffix(msg, "']'"):
		return fmt.Sprintf(" (in the [...] that starts at line %d)", within)
	}
	return fmt.Sprintf(" (in the mapping or list that starts at line %d; check the indentation)", within)
}
