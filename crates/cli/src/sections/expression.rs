//! Nsight Compute's derived-metric expressions, and the expansion of a section row's metric
//! name into how its value is obtained ([`Expr`]).

use kreplay_format::sections_out::{Attribute, BinaryOp, Expr};
use std::collections::HashMap;

/// Why a metric name is not a CUPTI metric kreplay collects, if it is one of the kinds Nsight
/// Compute handles itself.
pub(super) fn not_collected(name: &str) -> Option<&'static str> {
    if name.starts_with("regex:") {
        Some("regular-expression rows are not expanded")
    } else if name.starts_with("breakdown:") {
        Some("breakdowns are Nsight Compute's own tables")
    } else if name.starts_with("pmsampling:") {
        Some("PM sampling is not collected")
    } else if name.starts_with("group:") {
        Some("metric groups are Nsight Compute's own")
    } else if name.starts_with("launch__")
        || name.starts_with("device__")
        || name.starts_with("profiler__")
    {
        Some("Nsight Compute computes it itself")
    } else {
        None
    }
}

/// The deepest chain of derived metrics followed.
const MAX_DERIVED_DEPTH: usize = 16;
/// The most metric names one row's derived metrics may expand to.
const MAX_DERIVED_TERMS: usize = 10_000;

/// Expands metric names into [`Expr`]s: launch attributes, derived metrics (their operands
/// expanded in turn, a metric that refers to itself or an expansion beyond the limits left
/// unavailable), CUPTI metrics `known` to the chip.
pub(super) struct Expander<'a> {
    definitions: &'a HashMap<&'a str, &'a str>,
    known: &'a dyn Fn(&str) -> bool,
    chip: &'a str,
    /// The derived metrics being expanded, outermost first.
    open: Vec<String>,
    /// Names left to expand for the current row.
    budget: usize,
}

impl<'a> Expander<'a> {
    pub(super) fn new(
        definitions: &'a HashMap<&'a str, &'a str>,
        known: &'a dyn Fn(&str) -> bool,
        chip: &'a str,
    ) -> Expander<'a> {
        Expander {
            definitions,
            known,
            chip,
            open: Vec::new(),
            budget: MAX_DERIVED_TERMS,
        }
    }

    /// A row's value: `name` expanded with a fresh budget.
    pub(super) fn expr(&mut self, name: &str) -> Expr {
        self.budget = MAX_DERIVED_TERMS;
        self.open.clear();
        self.name(name)
    }

    fn name(&mut self, name: &str) -> Expr {
        if let Some(attribute) = Attribute::for_metric(name) {
            if !attribute.computable_on(self.chip) {
                return Expr::Unavailable(format!(
                    "kreplay computes occupancy for GH100 and GA100, not {}",
                    self.chip
                ));
            }
            return Expr::Attribute(attribute);
        }
        if let Some(why) = not_collected(name) {
            return Expr::Unavailable(why.to_string());
        }
        let Some(expression) = self.definitions.get(name).copied() else {
            return if (self.known)(name) {
                Expr::Counter(name.to_string())
            } else {
                Expr::Unavailable(format!("not a metric CUPTI can collect on {}", self.chip))
            };
        };
        if self.open.iter().any(|o| o == name) {
            return Expr::Unavailable(format!("the derived metric {name} refers to itself"));
        }
        if self.open.len() >= MAX_DERIVED_DEPTH {
            return Expr::Unavailable(format!(
                "derived metrics nest deeper than {MAX_DERIVED_DEPTH}"
            ));
        }
        let tree = match parse_expression(expression) {
            Ok(tree) => tree,
            Err(e) => {
                return Expr::Unavailable(format!(
                    "its expression '{expression}' does not parse: {e}"
                ))
            }
        };
        self.open.push(name.to_string());
        let expr = tree.map_names(&mut |operand| {
            if self.budget == 0 {
                return Expr::Unavailable(format!(
                    "derived metrics expand to more than {MAX_DERIVED_TERMS} terms"
                ));
            }
            self.budget -= 1;
            self.name(operand)
        });
        self.open.pop();
        expr
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Name(String),
    Number(String),
    Op(char),
}

fn tokens(text: &str) -> Result<Vec<Token>, String> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut at = 0;
    while at < chars.len() {
        let c = chars[at];
        if c.is_whitespace() {
            at += 1;
        } else if "+-*/(),".contains(c) {
            out.push(Token::Op(c));
            at += 1;
        } else if c.is_ascii_digit() {
            let start = at;
            while at < chars.len() && (chars[at].is_ascii_digit() || chars[at] == '.') {
                at += 1;
            }
            out.push(Token::Number(chars[start..at].iter().collect()));
        } else if c.is_alphabetic() || c == '_' {
            let start = at;
            while at < chars.len()
                && (chars[at].is_alphanumeric() || matches!(chars[at], '_' | '.' | ':'))
            {
                at += 1;
            }
            out.push(Token::Name(chars[start..at].iter().collect()));
        } else {
            return Err(format!("unexpected '{c}'"));
        }
    }
    Ok(out)
}

/// A parsed expression whose names are not yet resolved.
#[derive(Debug)]
pub(super) enum Tree {
    Name(String),
    Constant(f64, bool),
    Binary(BinaryOp, Box<Tree>, Box<Tree>),
    /// A function of Nsight Compute's newer expressions: `simplify(x)`, `nan_as_zero(x)`.
    Call(String, Vec<Tree>),
}

impl Tree {
    pub(super) fn map_names(self, resolve: &mut dyn FnMut(&str) -> Expr) -> Expr {
        match self {
            Tree::Name(name) => resolve(&name),
            Tree::Constant(value, integer) => Expr::Constant { value, integer },
            Tree::Binary(op, lhs, rhs) => Expr::Binary {
                op,
                lhs: Box::new(lhs.map_names(resolve)),
                rhs: Box::new(rhs.map_names(resolve)),
            },
            Tree::Call(function, mut args) => match (function.as_str(), args.len()) {
                // `simplify` only changes how Nsight Compute stores instanced values: the
                // value kreplay shows (instances summed) is the argument's.
                ("simplify", 1) => args.remove(0).map_names(resolve),
                ("nan_as_zero", 1) => Expr::NanAsZero(Box::new(args.remove(0).map_names(resolve))),
                _ => Expr::Unavailable(format!(
                    "the function {function} with {} argument(s) is not known to kreplay",
                    args.len()
                )),
            },
        }
    }
}

/// Parentheses nested at most this deep in a derived metric's expression.
const MAX_PARENTHESES: usize = 64;

/// Nsight Compute's derived-metric expressions (`operand op operand`), read as ordinary
/// arithmetic (`*` and `/` before `+` and `-`, parentheses), a superset of its grammar.
pub(super) fn parse_expression(text: &str) -> Result<Tree, String> {
    let tokens = tokens(text)?;
    let mut at = 0;
    let tree = sum(&tokens, &mut at, 0)?;
    if at != tokens.len() {
        return Err(format!("unexpected {:?}", tokens[at]));
    }
    Ok(tree)
}

fn sum(tokens: &[Token], at: &mut usize, depth: usize) -> Result<Tree, String> {
    let mut lhs = product(tokens, at, depth)?;
    while let Some(Token::Op(c @ ('+' | '-'))) = tokens.get(*at) {
        *at += 1;
        let op = if *c == '+' {
            BinaryOp::Add
        } else {
            BinaryOp::Sub
        };
        lhs = Tree::Binary(op, Box::new(lhs), Box::new(product(tokens, at, depth)?));
    }
    Ok(lhs)
}

fn product(tokens: &[Token], at: &mut usize, depth: usize) -> Result<Tree, String> {
    let mut lhs = operand(tokens, at, depth)?;
    while let Some(Token::Op(c @ ('*' | '/'))) = tokens.get(*at) {
        *at += 1;
        let op = if *c == '*' {
            BinaryOp::Mul
        } else {
            BinaryOp::Div
        };
        lhs = Tree::Binary(op, Box::new(lhs), Box::new(operand(tokens, at, depth)?));
    }
    Ok(lhs)
}

fn operand(tokens: &[Token], at: &mut usize, depth: usize) -> Result<Tree, String> {
    let token = tokens.get(*at).ok_or("the expression ends early")?;
    *at += 1;
    match token {
        Token::Name(name) if tokens.get(*at) == Some(&Token::Op('(')) => {
            if depth >= MAX_PARENTHESES {
                return Err(format!("parentheses nested deeper than {MAX_PARENTHESES}"));
            }
            *at += 1;
            let mut args = Vec::new();
            if tokens.get(*at) != Some(&Token::Op(')')) {
                loop {
                    args.push(sum(tokens, at, depth + 1)?);
                    match tokens.get(*at) {
                        Some(Token::Op(',')) => *at += 1,
                        _ => break,
                    }
                }
            }
            match tokens.get(*at) {
                Some(Token::Op(')')) => {
                    *at += 1;
                    Ok(Tree::Call(name.clone(), args))
                }
                _ => Err(format!("missing ')' after the arguments of {name}")),
            }
        }
        Token::Name(name) => Ok(Tree::Name(name.clone())),
        Token::Number(text) => text
            .parse::<f64>()
            .map(|v| Tree::Constant(v, !text.contains('.')))
            .map_err(|_| format!("bad number '{text}'")),
        Token::Op('(') if depth >= MAX_PARENTHESES => {
            Err(format!("parentheses nested deeper than {MAX_PARENTHESES}"))
        }
        Token::Op('(') => {
            let inner = sum(tokens, at, depth + 1)?;
            match tokens.get(*at) {
                Some(Token::Op(')')) => {
                    *at += 1;
                    Ok(inner)
                }
                _ => Err("missing ')'".into()),
            }
        }
        other => Err(format!("unexpected {other:?}")),
    }
}
