//! Reading an answer while it streams: the sections' text so far.

use super::{lenient_section, ModelSection};

/// A section's text as generated so far.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PartialSection {
    pub text: String,
    /// The section's object is closed: its text and cites are final.
    pub closed: bool,
    /// Once closed: the section as written (its cites and quote, read
    /// leniently), so its citations can be shown before the answer ends.
    pub written: Option<ModelSection>,
}

/// What an unfinished answer says so far: `answerable` once written, and
/// each section's text (the last possibly cut mid-string). Reads any
/// prefix of a valid answer; never fails, a malformed prefix gives what
/// could be read before it.
pub fn partial_sections(prefix: &str) -> (Option<bool>, Vec<PartialSection>) {
    let mut scan = Scanner { chars: prefix.chars().collect(), pos: 0 };
    let mut answerable = None;
    let mut sections = Vec::new();
    if !scan.eat('{') {
        return (None, sections);
    }
    while let Some(key) = scan.string() {
        if !scan.eat(':') {
            break;
        }
        match key.text.as_str() {
            "answerable" => {
                if scan.literal("true") {
                    answerable = Some(true);
                } else if scan.literal("false") {
                    answerable = Some(false);
                } else {
                    break;
                }
            }
            "sections" => {
                if !scan.eat('[') {
                    break;
                }
                loop {
                    scan.ws();
                    let opened_at = scan.pos;
                    if !scan.eat('{') {
                        break;
                    }
                    let mut section = PartialSection::default();
                    let mut complete = true;
                    loop {
                        let Some(k) = scan.string() else {
                            complete = false;
                            break;
                        };
                        if !scan.eat(':') {
                            complete = false;
                            break;
                        }
                        if k.text == "text" {
                            let Some(v) = scan.string() else { break };
                            section.text = v.text;
                            if !v.closed {
                                complete = false;
                                break;
                            }
                        } else if !scan.skip_value() {
                            complete = false;
                            break;
                        }
                        if !scan.eat(',') {
                            break;
                        }
                    }
                    section.closed = complete && scan.eat('}');
                    if section.closed {
                        let object: String = scan.chars[opened_at..scan.pos].iter().collect();
                        section.written = serde_json::from_str::<serde_json::Value>(&object).ok().as_ref().and_then(lenient_section);
                    }
                    let closed = section.closed;
                    sections.push(section);
                    if !closed || !scan.eat(',') {
                        break;
                    }
                }
                if !scan.eat(']') {
                    break;
                }
            }
            _ => {
                if !scan.skip_value() {
                    break;
                }
            }
        }
        if !scan.eat(',') {
            break;
        }
    }
    (answerable, sections)
}

struct ScannedString {
    text: String,
    closed: bool,
}

struct Scanner {
    chars: Vec<char>,
    pos: usize,
}

impl Scanner {
    fn ws(&mut self) {
        while self.chars.get(self.pos).is_some_and(|c| c.is_whitespace()) {
            self.pos += 1;
        }
    }

    fn eat(&mut self, c: char) -> bool {
        self.ws();
        if self.chars.get(self.pos) == Some(&c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn literal(&mut self, word: &str) -> bool {
        self.ws();
        let n = word.chars().count();
        if self.chars.len() >= self.pos + n && self.chars[self.pos..self.pos + n].iter().copied().eq(word.chars()) {
            self.pos += n;
            true
        } else {
            false
        }
    }

    /// A JSON string from here; `closed: false` when the prefix ends inside
    /// it (an escape cut in half is left out).
    fn string(&mut self) -> Option<ScannedString> {
        if !self.eat('"') {
            return None;
        }
        let mut text = String::new();
        while let Some(&c) = self.chars.get(self.pos) {
            self.pos += 1;
            match c {
                '"' => return Some(ScannedString { text, closed: true }),
                '\\' => {
                    let Some(&e) = self.chars.get(self.pos) else { break };
                    self.pos += 1;
                    match e {
                        'n' => text.push('\n'),
                        't' => text.push('\t'),
                        'r' => text.push('\r'),
                        'b' | 'f' => {}
                        'u' => {
                            let hex: String = self.chars.get(self.pos..self.pos + 4).map(|h| h.iter().collect()).unwrap_or_default();
                            if hex.len() < 4 {
                                break;
                            }
                            self.pos += 4;
                            if let Some(ch) = u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                                text.push(ch);
                            }
                        }
                        other => text.push(other),
                    }
                }
                c => text.push(c),
            }
        }
        Some(ScannedString { text, closed: false })
    }

    /// Skips one complete value; false if the prefix ends inside it.
    fn skip_value(&mut self) -> bool {
        self.ws();
        match self.chars.get(self.pos) {
            Some('"') => self.string().is_some_and(|s| s.closed),
            Some('[') | Some('{') => {
                let mut depth = 0usize;
                while let Some(&c) = self.chars.get(self.pos) {
                    match c {
                        '"' => {
                            if !self.string().is_some_and(|s| s.closed) {
                                return false;
                            }
                            continue;
                        }
                        '[' | '{' => depth += 1,
                        ']' | '}' => {
                            depth -= 1;
                            if depth == 0 {
                                self.pos += 1;
                                return true;
                            }
                        }
                        _ => {}
                    }
                    self.pos += 1;
                }
                false
            }
            Some(_) => {
                let start = self.pos;
                while self.chars.get(self.pos).is_some_and(|c| !matches!(c, ',' | '}' | ']') && !c.is_whitespace()) {
                    self.pos += 1;
                }
                self.pos > start && self.pos < self.chars.len()
            }
            None => false,
        }
    }
}
