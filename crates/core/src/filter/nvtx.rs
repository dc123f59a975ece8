//! `--nvtx-include` / `--nvtx-exclude`: which dispatches are profiled, by the NVTX ranges open
//! at their launch, with Nsight Compute's syntax and meaning (its CLI guide, "NVTX Filtering").
//!
//! A configuration is `[regex:][DOMAIN@]RANGES`:
//! - **Push/pop** ranges when `RANGES` holds a `/`, starts with `[` or ends with `]`: names
//!   separated by `/`, outermost first, matched as a run of consecutive entries of the launching
//!   thread's push/pop stack of that domain. `A/` is "inside A" (anywhere in the stack, nested
//!   or not), `A/B` is "B directly inside A", `*` stands for zero or more ranges and `+` for
//!   exactly one (`A/*/B`, `A/+/B`), `[A` puts A at the bottom of the stack, `B]` at its top.
//! - **Start/end** ranges otherwise: names separated by `,`, each an open start/end range of
//!   that domain (on any thread) at the launch: `A,B` is inside both.
//! - Without `DOMAIN@`, the default domain. One domain per configuration.
//! - `regex:` makes every domain and range name a regular expression, searched (not anchored,
//!   as `--kernel-include-regex`; write `^…$` for a whole name). There a `[` that starts the
//!   range names and a `]` that ends them are written `/[` and `/]` to be part of the expression.
//! - `\` before a character makes it part of the name (`A\/B` is the range `A/B`).
//!
//! Several includes: a dispatch inside any one of them; excludes: not inside any one of them.
//! No include: every dispatch, less the excluded.

use regex::Regex;

/// A configuration the syntax does not allow: the option, its text and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{option} {text:?}: {reason}")]
pub struct NvtxError {
    pub option: &'static str,
    pub text: String,
    pub reason: String,
}

/// A domain or range name as a configuration gives it.
#[derive(Debug, Clone)]
enum Name {
    Exact(String),
    Pattern(Regex),
}

impl Name {
    fn matches(&self, name: &str) -> bool {
        match self {
            Name::Exact(exact) => exact == name,
            Name::Pattern(re) => re.is_match(name),
        }
    }
}

/// One step of a push/pop configuration.
#[derive(Debug, Clone)]
enum Step {
    Range(Name),
    /// `+`: exactly one range.
    One,
    /// `*`: zero or more ranges.
    Any,
}

#[derive(Debug, Clone)]
enum Ranges {
    PushPop {
        bottom: bool,
        top: bool,
        steps: Vec<Step>,
    },
    StartEnd(Vec<Name>),
}

/// One `--nvtx-include` or `--nvtx-exclude` configuration, parsed.
#[derive(Debug, Clone)]
pub struct NvtxConfig {
    domain: Name,
    ranges: Ranges,
}

/// The NVTX state a launch sees: the launching thread's push/pop ranges (outermost first) and
/// the process's open start/end ranges, each as (domain, message); the default domain is "".
#[derive(Debug, Clone, Copy, Default)]
pub struct NvtxState<'a> {
    pub push_pop: &'a [(&'a str, &'a str)],
    pub start_end: &'a [(&'a str, &'a str)],
}

/// A lexical piece of the range part of a configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    /// A character of a name; `escaped` when a `\` made it one.
    Char {
        c: char,
        escaped: bool,
    },
    Slash,
    Comma,
    Bottom,
    Top,
}

impl NvtxConfig {
    /// Parses one configuration of `option` (named in errors).
    pub fn parse(option: &'static str, text: &str) -> Result<NvtxConfig, NvtxError> {
        let error = |reason: String| NvtxError {
            option,
            text: text.to_string(),
            reason,
        };
        let (regex, body) = match text.strip_prefix("regex:") {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        let (domain, ranges) = match split_unescaped(body, '@') {
            Some((domain, ranges)) => {
                if domain.is_empty() {
                    return Err(error(
                        "'@' follows no domain name; write DOMAIN@RANGE, or leave out '@' for the default domain".into(),
                    ));
                }
                (
                    name(&unescape(domain, regex), regex).map_err(&error)?,
                    ranges,
                )
            }
            None => (Name::Exact(String::new()), body),
        };
        let tokens = tokenize(ranges, regex);
        if tokens.iter().any(|t| {
            *t == Token::Char {
                c: '@',
                escaped: false,
            }
        }) {
            return Err(error(
                "ranges of different domains in one configuration are not supported; give one option per domain (escape a literal @ as \\@)".into(),
            ));
        }
        let push_pop = tokens
            .iter()
            .any(|t| matches!(t, Token::Slash | Token::Bottom | Token::Top));
        let ranges = if push_pop {
            push_pop_ranges(&tokens, regex).map_err(&error)?
        } else {
            start_end_ranges(&tokens, regex).map_err(&error)?
        };
        Ok(NvtxConfig { domain, ranges })
    }

    /// Whether a launch with NVTX state `state` is inside the ranges this configuration names.
    pub fn matches(&self, state: &NvtxState<'_>) -> bool {
        match &self.ranges {
            Ranges::StartEnd(names) => names.iter().all(|name| {
                state
                    .start_end
                    .iter()
                    .any(|(domain, message)| self.domain.matches(domain) && name.matches(message))
            }),
            Ranges::PushPop { bottom, top, steps } => {
                // Push/pop ranges nest per domain: each domain's stack on its own.
                let mut domains: Vec<&str> = Vec::new();
                for (domain, _) in state.push_pop {
                    if self.domain.matches(domain) && !domains.contains(domain) {
                        domains.push(domain);
                    }
                }
                domains.iter().any(|domain| {
                    let stack: Vec<&str> = state
                        .push_pop
                        .iter()
                        .filter(|(d, _)| d == domain)
                        .map(|(_, message)| *message)
                        .collect();
                    let starts = if *bottom { 0..=0 } else { 0..=stack.len() };
                    starts
                        .into_iter()
                        .any(|start| steps_match(steps, &stack, start, *top))
                })
            }
        }
    }
}

/// Whether `steps` match `stack` from `at` on (to its top when `top`).
fn steps_match(steps: &[Step], stack: &[&str], at: usize, top: bool) -> bool {
    let Some((step, rest)) = steps.split_first() else {
        return !top || at == stack.len();
    };
    match step {
        Step::Range(name) => {
            at < stack.len() && name.matches(stack[at]) && steps_match(rest, stack, at + 1, top)
        }
        Step::One => at < stack.len() && steps_match(rest, stack, at + 1, top),
        Step::Any => (at..=stack.len()).any(|next| steps_match(rest, stack, next, top)),
    }
}

/// `text` split at its first `c` not escaped by `\`.
fn split_unescaped(text: &str, c: char) -> Option<(&str, &str)> {
    let mut escaped = false;
    for (i, ch) in text.char_indices() {
        if escaped {
            escaped = false;
        } else if ch == '\\' {
            escaped = true;
        } else if ch == c {
            return Some((&text[..i], &text[i + c.len_utf8()..]));
        }
    }
    None
}

/// A domain's text with its escapes resolved (kept as escapes for a regular expression).
fn unescape(text: &str, regex: bool) -> String {
    let chars: Vec<Token> = tokenize_chars(text);
    to_name_text(&chars, regex)
}

fn tokenize_chars(text: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(next) => out.push(Token::Char {
                    c: next,
                    escaped: true,
                }),
                None => out.push(Token::Char {
                    c: '\\',
                    escaped: false,
                }),
            },
            c => out.push(Token::Char { c, escaped: false }),
        }
    }
    out
}

/// The range part as tokens: `/` and `,` delimit, a leading `[` and a trailing `]` anchor
/// (in a regular expression, `/[` and `/]` there are the characters).
fn tokenize(text: &str, regex: bool) -> Vec<Token> {
    let mut tokens = tokenize_chars(text);
    let is = |t: &Token, ch: char| {
        *t == Token::Char {
            c: ch,
            escaped: false,
        }
    };
    let mut head = Vec::new();
    let mut tail = Vec::new();
    if regex && tokens.len() >= 2 && is(&tokens[0], '/') && is(&tokens[1], '[') {
        tokens.drain(..2);
        head.push(Token::Char {
            c: '[',
            escaped: false,
        });
    } else if tokens.first().is_some_and(|t| is(t, '[')) {
        tokens.remove(0);
        head.push(Token::Bottom);
    }
    let n = tokens.len();
    if regex && n >= 2 && is(&tokens[n - 2], '/') && is(&tokens[n - 1], ']') {
        tokens.truncate(n - 2);
        tail.push(Token::Char {
            c: ']',
            escaped: false,
        });
    } else if tokens.last().is_some_and(|t| is(t, ']')) {
        tokens.pop();
        tail.push(Token::Top);
    }
    let middle = tokens.into_iter().map(|t| match t {
        Token::Char {
            c: '/',
            escaped: false,
        } => Token::Slash,
        Token::Char {
            c: ',',
            escaped: false,
        } => Token::Comma,
        t => t,
    });
    head.into_iter().chain(middle).chain(tail).collect()
}

/// The text of a name: escaped characters as themselves, or, in a regular expression, escaped
/// again when the expression would read them otherwise.
fn to_name_text(chars: &[Token], regex: bool) -> String {
    let mut out = String::new();
    for t in chars {
        if let Token::Char { c, escaped } = *t {
            if regex && escaped {
                if "@,/".contains(c) {
                    out.push(c);
                } else {
                    out.push('\\');
                    out.push(c);
                }
            } else {
                out.push(c);
            }
        }
    }
    out
}

fn name(text: &str, regex: bool) -> Result<Name, String> {
    if !regex {
        return Ok(Name::Exact(text.to_string()));
    }
    Regex::new(text).map(Name::Pattern).map_err(|e| {
        let detail = e.to_string();
        let detail = detail.lines().last().unwrap_or("invalid").trim().to_string();
        format!("'{text}' is not a valid regular expression ({detail}); fix it, or leave out regex: for a plain name")
    })
}

/// The pieces of `tokens` between `delimiter`s, each a name's characters.
fn pieces(tokens: &[Token], delimiter: Token) -> Vec<&[Token]> {
    tokens.split(|t| *t == delimiter).collect()
}

fn push_pop_ranges(tokens: &[Token], regex: bool) -> Result<Ranges, String> {
    if tokens.contains(&Token::Comma) {
        return Err(
            "',' separates start/end ranges but '/', '[' or ']' make this a push/pop configuration; give them in separate options (escape a literal , as \\,)".into(),
        );
    }
    let bottom = tokens.first() == Some(&Token::Bottom);
    let top = tokens.last() == Some(&Token::Top);
    let inner = &tokens[usize::from(bottom)..tokens.len() - usize::from(top)];
    if inner.contains(&Token::Bottom) || inner.contains(&Token::Top) {
        return Err("'[' only starts and ']' only ends the range names".into());
    }
    let mut parts = pieces(inner, Token::Slash);
    // `A/`: the delimiter that says a single name is a push/pop range.
    if parts.len() > 1 && parts.last().is_some_and(|p| p.is_empty()) {
        parts.pop();
    }
    let mut steps = Vec::new();
    for part in parts {
        let text = to_name_text(part, regex);
        let plain = |c: char| part == [Token::Char { c, escaped: false }];
        let step = if part.is_empty() {
            return Err(
                "a range name is empty (two '/' in a row, or one at the start); write e.g. \"A/B\", \"A/*/B\" or \"A/\"".into(),
            );
        } else if plain('*') {
            Step::Any
        } else if plain('+') {
            Step::One
        } else {
            Step::Range(name(&text, regex)?)
        };
        steps.push(step);
    }
    if !steps.iter().any(|s| matches!(s, Step::Range(_))) {
        return Err(
            "names no range ('*' and '+' stand for ranges between named ones); write e.g. \"A/\" or \"A/*/B\"".into(),
        );
    }
    Ok(Ranges::PushPop { bottom, top, steps })
}

fn start_end_ranges(tokens: &[Token], regex: bool) -> Result<Ranges, String> {
    if tokens.is_empty() {
        return Err(
            "names no range; write a start/end range \"A\", a push/pop range \"A/\", or DOMAIN@A"
                .into(),
        );
    }
    let mut names = Vec::new();
    for part in pieces(tokens, Token::Comma) {
        if part.is_empty() {
            return Err(
                "a range name between ',' is empty; write e.g. \"A,B\" for inside both start/end ranges A and B".into(),
            );
        }
        names.push(name(&to_name_text(part, regex), regex)?);
    }
    Ok(Ranges::StartEnd(names))
}

/// Every `--nvtx-include` and `--nvtx-exclude` of a run.
#[derive(Debug, Clone, Default)]
pub struct NvtxFilter {
    include: Vec<NvtxConfig>,
    exclude: Vec<NvtxConfig>,
}

/// The option names, as Nsight Compute's.
pub const NVTX_INCLUDE: &str = "--nvtx-include";
pub const NVTX_EXCLUDE: &str = "--nvtx-exclude";

impl NvtxFilter {
    /// `None` when no configuration is given (no NVTX filtering).
    pub fn new(include: &[String], exclude: &[String]) -> Result<Option<NvtxFilter>, NvtxError> {
        if include.is_empty() && exclude.is_empty() {
            return Ok(None);
        }
        let parse = |option, list: &[String]| {
            list.iter()
                .map(|text| NvtxConfig::parse(option, text))
                .collect::<Result<Vec<_>, _>>()
        };
        Ok(Some(NvtxFilter {
            include: parse(NVTX_INCLUDE, include)?,
            exclude: parse(NVTX_EXCLUDE, exclude)?,
        }))
    }

    /// Whether a launch with NVTX state `state` is profiled: inside an include (or there is
    /// none) and inside no exclude.
    pub fn admits(&self, state: &NvtxState<'_>) -> bool {
        (self.include.is_empty() || self.include.iter().any(|c| c.matches(state)))
            && !self.exclude.iter().any(|c| c.matches(state))
    }
}

#[cfg(test)]
#[path = "nvtx_tests.rs"]
mod tests;
