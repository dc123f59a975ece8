//! A reader of the Protocol Buffers text format without a schema, enough for Nsight Compute's
//! `.section` files: fields `Name: value` and `Name { ... }` (also `Name: { ... }` and `< >`),
//! quoted strings (adjacent ones joined, C escapes), numbers, identifiers (enum values, `true`),
//! `[a, b]` lists, `#` comments, optional `,`/`;` between fields.
//!
//! The section schema (`ProfilerSection.proto`, shipped with Nsight Compute) is not needed: the
//! reader keeps every field in order, and [`super`] picks the ones it knows by name.

use std::fmt;

/// A value of a field.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A quoted string, escapes resolved.
    Text(String),
    /// A number or an identifier (enum value, `true`), as written.
    Word(String),
    Message(Message),
}

/// A message: its fields in file order (a repeated field appears once per occurrence).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Message {
    pub fields: Vec<(String, Value)>,
}

impl Message {
    /// Every value of field `name`.
    pub fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
        self.fields
            .iter()
            .filter(move |(n, _)| n == name)
            .map(|(_, v)| v)
    }

    /// Every message value of field `name`.
    pub fn messages<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Message> + 'a {
        self.all(name).filter_map(|v| match v {
            Value::Message(m) => Some(m),
            _ => None,
        })
    }

    /// The first message value of field `name`.
    pub fn message(&self, name: &str) -> Option<&Message> {
        self.fields.iter().find_map(|(n, v)| match v {
            Value::Message(m) if n == name => Some(m),
            _ => None,
        })
    }

    /// The first scalar value of field `name` (a string's text, or a word as written).
    pub fn scalar(&self, name: &str) -> Option<&str> {
        self.fields.iter().find_map(|(n, v)| match v {
            Value::Text(s) | Value::Word(s) if n == name => Some(s.as_str()),
            _ => None,
        })
    }
}

/// Where and why a text did not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub column: usize,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.line, self.column, self.message
        )
    }
}

impl std::error::Error for ParseError {}

/// Parses a whole text-format message.
pub fn parse(text: &str) -> Result<Message, ParseError> {
    let mut parser = Parser {
        chars: text.chars().collect(),
        at: 0,
        depth: 0,
    };
    let message = parser.fields(None)?;
    Ok(message)
}

struct Parser {
    chars: Vec<char>,
    at: usize,
    /// Messages open around the current position.
    depth: usize,
}

/// The deepest nesting of messages read (as protobuf's own parsers limit it): a file nested
/// deeper is refused instead of exhausting the stack.
pub const MAX_DEPTH: usize = 100;

impl Parser {
    fn error(&self, message: impl Into<String>) -> ParseError {
        let before = &self.chars[..self.at.min(self.chars.len())];
        let line = before.iter().filter(|&&c| c == '\n').count() + 1;
        let column = before.iter().rev().take_while(|&&c| c != '\n').count() + 1;
        ParseError {
            line,
            column,
            message: message.into(),
        }
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.at).copied()
    }

    /// Skips white space and `#` comments.
    fn skip(&mut self) {
        while let Some(c) = self.peek() {
            if c.is_whitespace() {
                self.at += 1;
            } else if c == '#' {
                while self.peek().is_some_and(|c| c != '\n') {
                    self.at += 1;
                }
            } else {
                break;
            }
        }
    }

    /// A nested message up to `close`, within [`MAX_DEPTH`].
    fn nested(&mut self, close: char) -> Result<Message, ParseError> {
        if self.depth >= MAX_DEPTH {
            return Err(self.error(format!("messages nested deeper than {MAX_DEPTH}")));
        }
        self.depth += 1;
        let message = self.fields(Some(close));
        self.depth -= 1;
        message
    }

    /// Fields up to `close` (or the end of the text when `close` is `None`).
    fn fields(&mut self, close: Option<char>) -> Result<Message, ParseError> {
        let mut message = Message::default();
        loop {
            self.skip();
            match (self.peek(), close) {
                (None, None) => return Ok(message),
                (None, Some(c)) => return Err(self.error(format!("missing '{c}'"))),
                (Some(c), Some(end)) if c == end => {
                    self.at += 1;
                    return Ok(message);
                }
                _ => {}
            }
            let name = self.word();
            if name.is_empty() {
                let found = self.peek().map(String::from).unwrap_or_default();
                return Err(self.error(format!("expected a field name, found '{found}'")));
            }
            self.skip();
            let colon = self.peek() == Some(':');
            if colon {
                self.at += 1;
                self.skip();
            }
            match self.peek() {
                Some('{') | Some('<') => {
                    let end = if self.peek() == Some('{') { '}' } else { '>' };
                    self.at += 1;
                    let inner = self.nested(end)?;
                    message.fields.push((name, Value::Message(inner)));
                }
                // A list; without the colon only of messages (`Name [{...}, {...}]`).
                Some('[') => {
                    self.at += 1;
                    loop {
                        self.skip();
                        if self.peek() == Some(']') {
                            self.at += 1;
                            break;
                        }
                        let value = self.value()?;
                        message.fields.push((name.clone(), value));
                        self.skip();
                        match self.peek() {
                            Some(',') => self.at += 1,
                            Some(']') => {}
                            _ => return Err(self.error("expected ',' or ']' in a list")),
                        }
                    }
                }
                _ if colon => {
                    let value = self.value()?;
                    message.fields.push((name, value));
                }
                _ => return Err(self.error(format!("expected ':' or '{{' after '{name}'"))),
            }
            self.skip();
            if matches!(self.peek(), Some(',') | Some(';')) {
                self.at += 1;
            }
        }
    }

    /// An identifier or a number (letters, digits, `_`, `.`, `+`, `-`).
    fn word(&mut self) -> String {
        let start = self.at;
        while self
            .peek()
            .is_some_and(|c| c.is_alphanumeric() || matches!(c, '_' | '.' | '+' | '-'))
        {
            self.at += 1;
        }
        self.chars[start..self.at].iter().collect()
    }

    fn value(&mut self) -> Result<Value, ParseError> {
        match self.peek() {
            Some('"') | Some('\'') => {
                let mut text = self.string()?;
                // Adjacent strings are one value.
                loop {
                    self.skip();
                    if matches!(self.peek(), Some('"') | Some('\'')) {
                        text.push_str(&self.string()?);
                    } else {
                        return Ok(Value::Text(text));
                    }
                }
            }
            Some('{') | Some('<') => {
                let end = if self.peek() == Some('{') { '}' } else { '>' };
                self.at += 1;
                Ok(Value::Message(self.nested(end)?))
            }
            _ => {
                let word = self.word();
                if word.is_empty() {
                    let found = self.peek().map(String::from).unwrap_or_default();
                    Err(self.error(format!("expected a value, found '{found}'")))
                } else {
                    Ok(Value::Word(word))
                }
            }
        }
    }

    fn string(&mut self) -> Result<String, ParseError> {
        let quote = self.peek().unwrap_or('"');
        let start = self.at;
        self.at += 1;
        let mut bytes: Vec<u8> = Vec::new();
        loop {
            let Some(c) = self.peek() else {
                self.at = start;
                return Err(self.error("unterminated string"));
            };
            self.at += 1;
            if c == quote {
                break;
            }
            if c == '\n' {
                self.at = start;
                return Err(self.error("unterminated string (it ends at the end of its line)"));
            }
            if c != '\\' {
                let mut buf = [0u8; 4];
                bytes.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                continue;
            }
            let Some(e) = self.peek() else {
                return Err(self.error("unterminated string"));
            };
            self.at += 1;
            match e {
                'n' => bytes.push(b'\n'),
                't' => bytes.push(b'\t'),
                'r' => bytes.push(b'\r'),
                'a' => bytes.push(7),
                'b' => bytes.push(8),
                'f' => bytes.push(12),
                'v' => bytes.push(11),
                '\\' | '\'' | '"' | '?' => bytes.push(e as u8),
                'x' => {
                    let digits = self.digits(16, 2);
                    let value = u8::from_str_radix(&digits, 16)
                        .map_err(|_| self.error("bad \\x escape"))?;
                    bytes.push(value);
                }
                '0'..='7' => {
                    self.at -= 1;
                    let digits = self.digits(8, 3);
                    let value = u32::from_str_radix(&digits, 8)
                        .ok()
                        .and_then(|v| u8::try_from(v).ok())
                        .ok_or_else(|| self.error("bad octal escape"))?;
                    bytes.push(value);
                }
                other => return Err(self.error(format!("unknown escape '\\{other}'"))),
            }
        }
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    fn digits(&mut self, radix: u32, most: usize) -> String {
        let start = self.at;
        while self.at - start < most && self.peek().is_some_and(|c| c.is_digit(radix)) {
            self.at += 1;
        }
        self.chars[start..self.at].iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_nested_messages_strings_words_and_comments() {
        let text = r#"
# a comment
Identifier: "Sample"   # trailing comment
DisplayName: "Two " "parts"
Order: 10
Header {
  Metrics { Label: "A \"quoted\" label" Name: "sm__x.sum" }
  Metrics: { Name: 'y\x41\101' Filter { MinArch: CC_90 } },
}
Tags: ["a", "b"];
Flag: true
"#;
        let m = parse(text).unwrap();
        assert_eq!(m.scalar("Identifier"), Some("Sample"));
        assert_eq!(m.scalar("DisplayName"), Some("Two parts"));
        assert_eq!(m.scalar("Order"), Some("10"));
        assert_eq!(m.scalar("Flag"), Some("true"));
        let header = m.message("Header").unwrap();
        let metrics: Vec<&Message> = header.messages("Metrics").collect();
        assert_eq!(metrics.len(), 2);
        assert_eq!(metrics[0].scalar("Label"), Some("A \"quoted\" label"));
        assert_eq!(metrics[1].scalar("Name"), Some("yAA"));
        assert_eq!(
            metrics[1].message("Filter").unwrap().scalar("MinArch"),
            Some("CC_90")
        );
        let tags: Vec<&Value> = m.all("Tags").collect();
        assert_eq!(
            tags,
            vec![&Value::Text("a".into()), &Value::Text("b".into())]
        );
    }

    #[test]
    fn errors_say_where() {
        let e = parse("A: \"x\"\nB {\n  C: 1\n").unwrap_err();
        assert!(e.message.contains("missing '}'"), "{e}");
        let e = parse("A: \"unterminated\nB: 1").unwrap_err();
        assert_eq!(
            (e.line, e.message.contains("unterminated")),
            (1, true),
            "{e}"
        );
        let e = parse("A B").unwrap_err();
        assert!(e.to_string().starts_with("line 1, column 3"), "{e}");
        let e = parse("A: }").unwrap_err();
        assert!(e.message.contains("expected a value"), "{e}");
    }

    #[test]
    fn lists_of_messages_need_no_colon_and_deep_nesting_is_refused() {
        let m = parse("Items [{ Name: \"a\" }, { Name: \"b\" }]").unwrap();
        let names: Vec<_> = m
            .messages("Items")
            .filter_map(|i| i.scalar("Name"))
            .collect();
        assert_eq!(names, ["a", "b"]);
        let deep = "A {".repeat(MAX_DEPTH + 1) + &"}".repeat(MAX_DEPTH + 1);
        let e = parse(&deep).unwrap_err();
        assert!(e.message.contains("nested deeper than 100"), "{e}");
        let fine = "A {".repeat(MAX_DEPTH) + &"}".repeat(MAX_DEPTH);
        assert!(parse(&fine).is_ok());
        // Far deeper input is refused without exhausting the stack.
        assert!(parse(&"A {".repeat(100_000)).is_err());
    }

    #[test]
    fn an_empty_text_is_an_empty_message() {
        assert_eq!(parse("  # nothing\n").unwrap(), Message::default());
    }
}
