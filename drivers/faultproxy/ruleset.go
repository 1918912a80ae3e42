// The proxy's rules in force: set, add, remove, list.

package faultproxy

import (
	"fmt"
	"slices"
)

// SetRules replaces every rule, resetting all counters. Either all rules
// are valid and in force, or none changes.
func (p *Proxy) SetRules(rules ...Rule) error {
	p.rulesMu.Lock()
	defer p.rulesMu.Unlock()
	// Explicit IDs first, so that a generated one never takes the ID a
	// later rule asks for.
	taken := map[string]bool{}
	for i, r := range rules {
		if err := p.check(r); err != nil {
			return fmt.Errorf("rule %d (%s): %w", i+1, r, err)
		}
		if r.ID != "" && taken[r.ID] {
			return fmt.Errorf("rule %d: duplicate ID %q", i+1, r.ID)
		}
		taken[r.ID] = true
	}
	states := make([]*ruleState, 0, len(rules))
	next := p.nextRule
	for _, r := range rules {
		if r.ID == "" {
			r.ID, next = freeID(next, taken)
			taken[r.ID] = true
		}
		states = append(states, newRuleState(r, p.cfg.Seed))
	}
	p.rules, p.nextRule = states, next
	return nil
}

// AddRule appends a rule, which is considered after the existing ones, and
// returns its ID.
func (p *Proxy) AddRule(r Rule) (string, error) {
	p.rulesMu.Lock()
	defer p.rulesMu.Unlock()
	if err := p.check(r); err != nil {
		return "", fmt.Errorf("rule %s: %w", r, err)
	}
	taken := map[string]bool{}
	for _, s := range p.rules {
		taken[s.rule.ID] = true
	}
	if r.ID == "" {
		r.ID, p.nextRule = freeID(p.nextRule, taken)
	} else if taken[r.ID] {
		return "", fmt.Errorf("rule %s: duplicate ID %q", r, r.ID)
	}
	p.rules = append(p.rules, newRuleState(r, p.cfg.Seed))
	return r.ID, nil
}

// check says whether the rule is valid and this proxy can carry it out:
// a crash rule needs Config.Crash.
func (p *Proxy) check(r Rule) error {
	if err := r.validate(p.names); err != nil {
		return err
	}
	if r.Action.Kind == ActionCrash && p.cfg.Crash == nil {
		return fmt.Errorf("proxy %s cannot kill the driver behind it (no Config.Crash)", p.cfg.Name)
	}
	return nil
}

// freeID returns the next "rule-N" ID not in taken, and the counter after it.
func freeID(next int, taken map[string]bool) (string, int) {
	for {
		next++
		id := fmt.Sprintf("rule-%d", next)
		if !taken[id] {
			return id, next
		}
	}
}

// RemoveRule removes the rule with the ID and reports whether there was one.
func (p *Proxy) RemoveRule(id string) bool {
	p.rulesMu.Lock()
	defer p.rulesMu.Unlock()
	i := slices.IndexFunc(p.rules, func(s *ruleState) bool { return s.rule.ID == id })
	if i < 0 {
		return false
	}
	p.rules = slices.Delete(p.rules, i, i+1)
	return true
}

// Clear removes every rule: from now on, every call is forwarded untouched.
func (p *Proxy) Clear() {
	p.rulesMu.Lock()
	defer p.rulesMu.Unlock()
	p.rules = nil
}

// Rules returns the rules in force, in the order they are considered, with
// their counters.
func (p *Proxy) Rules() []RuleStatus {
	p.rulesMu.Lock()
	defer p.rulesMu.Unlock()
	out := make([]RuleStatus, 0, len(p.rules))
	for _, s := range p.rules {
		out = append(out, RuleStatus{Rule: s.rule, Matched: s.matched, Fired: s.fired})
	}
	return out
}
