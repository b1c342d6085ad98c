//! `py-executor-override`: a copy of TensorRT-LLM's `py_executor.py` whose torch trace
//! carries Python stacks, recorded on rank 0 only.
//!
//! Two edits, both idempotent:
//! 1. `with_stack=True` in the `torch_profiler = torch.profiler.profile(...)` call (an
//!    existing `with_stack=` other than `True` is set to `True`);
//! 2. `and <rank> == 0` in `enable_torch_trace = bool(torch_trace_path and
//!    profile_start_stop)`, so only rank 0 runs the torch profiler.
//!
//! Both layouts in TensorRT-LLM's history are recognised by their enclosing function:
//! the `_profiler(self)` method of `PyExecutor` (8-space indent; rank from
//! `self.global_rank` where the method uses it, else `self.dist.rank`) and the newer
//! generator that takes `ctx` (4-space indent; rank from `ctx.svc.dist.rank`).
//!
//! The call is parsed, not pattern-matched: strings (all quote forms, prefixes, escapes),
//! comments and nested brackets are skipped, arguments are split at top-level commas, and
//! the new argument follows the call's own layout (same line, hanging indent, or closing
//! parenthesis on its own line). Anything else is refused with the reason, and the result
//! is re-parsed before it is returned; the host then runs `python3 -m py_compile` on it.

use llm_triage_plugin_api::tools::{check, find};
use llm_triage_plugin_api::{ToolFile, ToolOutput, ToolSpec};

pub const TOOL: &str = "py-executor-override";

pub fn spec() -> ToolSpec {
    ToolSpec::new(
        TOOL,
        "Copy TensorRT-LLM's py_executor.py with with_stack=True in its torch profiler and a \
         rank-0 guard on the torch trace (both layouts; idempotent)",
        &["source"],
        &["output"],
        check::PYTHON,
    )
}

/// The tool entry: `source` in, `output` out.
pub fn run(inputs: &[ToolFile]) -> Result<ToolOutput, String> {
    let source = find(inputs, "source").ok_or("no source text given")?;
    let patched = override_source(source)?;
    Ok(ToolOutput {
        files: [ToolFile {
            name: "output".into(),
            text: patched.text.into(),
        }]
        .into_iter()
        .collect(),
        notes: patched.notes.into_iter().map(Into::into).collect(),
    })
}

/// The patched text and what was done.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Override {
    pub text: String,
    pub notes: Vec<String>,
}

/// Applies both edits to `source`, or says why it cannot.
pub fn override_source(source: &str) -> Result<Override, String> {
    let lexed = Lexed::new(source)?;
    let call = profile_call(&lexed)?;
    let guard = guard_statement(&lexed)?;
    if enclosing_def(&lexed, call.name_at).map(|d| d.at) != Some(guard.def.at) {
        return Err(
            "the torch.profiler.profile(...) call and the enable_torch_trace assignment are \
             not in the same function; unknown py_executor.py layout"
                .to_string(),
        );
    }
    let mut edits = Vec::new();
    let mut notes = Vec::new();
    let layout = guard.def.layout_name();
    match with_stack_edit(&lexed, &call)? {
        Some(edit) => {
            notes.push(format!(
                "with_stack=True set in torch.profiler.profile(...) at line {} ({layout})",
                lexed.line_of(call.name_at)
            ));
            edits.push(edit);
        }
        None => notes.push(format!(
            "torch.profiler.profile(...) at line {} already has with_stack=True",
            lexed.line_of(call.name_at)
        )),
    }
    match guard.edit(&lexed)? {
        Some(mut guard_edits) => {
            notes.push(format!(
                "rank-0 guard added to enable_torch_trace at line {} ({} == 0)",
                lexed.line_of(guard.at),
                guard.rank
            ));
            edits.append(&mut guard_edits);
        }
        None => notes.push(format!(
            "enable_torch_trace at line {} already requires rank 0",
            lexed.line_of(guard.at)
        )),
    }
    let text = apply(source, edits);
    if text == source {
        notes.push("already patched: the output equals the source".to_string());
    } else {
        verify(&text)?;
    }
    Ok(Override { text, notes })
}

/// The patched text must parse again and carry both edits.
fn verify(text: &str) -> Result<(), String> {
    let again = override_source_checks(text)
        .map_err(|e| format!("internal error, the patched text does not re-parse: {e}"))?;
    if !again {
        return Err("internal error: the patched text lost an edit".to_string());
    }
    Ok(())
}

/// True when `text` parses and needs no edit.
fn override_source_checks(text: &str) -> Result<bool, String> {
    let lexed = Lexed::new(text)?;
    let call = profile_call(&lexed)?;
    let guard = guard_statement(&lexed)?;
    Ok(with_stack_edit(&lexed, &call)?.is_none() && guard.edit(&lexed)?.is_none())
}

/// A replacement of `source[start..end]`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Edit {
    start: usize,
    end: usize,
    text: String,
}

fn apply(source: &str, mut edits: Vec<Edit>) -> String {
    edits.sort_by_key(|e| std::cmp::Reverse(e.start));
    let mut text = source.to_string();
    for edit in edits {
        text.replace_range(edit.start..edit.end, &edit.text);
    }
    text
}

/// What each byte of the source is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Class {
    Code,
    Str,
    Comment,
}

/// The source with every byte classified. Python's significant characters are ASCII, so
/// byte offsets are safe to slice at wherever a `Code` byte is ASCII.
struct Lexed<'a> {
    src: &'a str,
    class: Vec<Class>,
}

impl<'a> Lexed<'a> {
    fn new(src: &'a str) -> Result<Self, String> {
        let bytes = src.as_bytes();
        let mut class = vec![Class::Code; bytes.len()];
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'#' => {
                    while i < bytes.len() && bytes[i] != b'\n' {
                        class[i] = Class::Comment;
                        i += 1;
                    }
                }
                quote @ (b'\'' | b'"') => {
                    let start = i;
                    let triple = bytes.get(i..i + 3) == Some(&[quote; 3][..]);
                    let width = if triple { 3 } else { 1 };
                    i += width;
                    loop {
                        let Some(&b) = bytes.get(i) else {
                            return Err(format!(
                                "unterminated string literal starting at line {}",
                                line_at(src, start)
                            ));
                        };
                        if b == b'\\' {
                            i += 2;
                        } else if !triple && b == b'\n' {
                            return Err(format!(
                                "unterminated string literal at line {}",
                                line_at(src, start)
                            ));
                        } else if b == quote
                            && (!triple || bytes.get(i..i + 3) == Some(&[quote; 3][..]))
                        {
                            i += width;
                            break;
                        } else {
                            i += 1;
                        }
                    }
                    let end = i.min(bytes.len());
                    class[start..end].fill(Class::Str);
                }
                _ => i += 1,
            }
        }
        Ok(Lexed { src, class })
    }

    fn is_code(&self, range: std::ops::Range<usize>) -> bool {
        range.end <= self.class.len() && self.class[range].iter().all(|c| *c == Class::Code)
    }

    fn byte(&self, at: usize) -> Option<u8> {
        self.src.as_bytes().get(at).copied()
    }

    fn line_of(&self, at: usize) -> usize {
        line_at(self.src, at)
    }

    fn line_start(&self, at: usize) -> usize {
        self.src[..at].rfind('\n').map(|i| i + 1).unwrap_or(0)
    }

    /// Offsets where `word` occurs as code, not inside a longer identifier or after a dot.
    fn code_words(&self, word: &str) -> Vec<usize> {
        self.src
            .match_indices(word)
            .map(|(at, _)| at)
            .filter(|&at| self.is_code(at..at + word.len()))
            .filter(|&at| {
                let before = at.checked_sub(1).and_then(|b| self.byte(b));
                let after = self.byte(at + word.len());
                !before.is_some_and(|b| is_ident(b) || b == b'.') && !after.is_some_and(is_ident)
            })
            .collect()
    }

    /// The next code byte at or after `at` that is not whitespace.
    fn skip_space(&self, mut at: usize, newlines: bool) -> usize {
        while let Some(b) = self.byte(at) {
            let space = b == b' ' || b == b'\t' || (newlines && (b == b'\n' || b == b'\r'));
            let comment = newlines && self.class[at] == Class::Comment;
            if !(space || comment) {
                break;
            }
            at += 1;
        }
        at
    }

    /// The `)`, `]` or `}` closing the bracket at `open`.
    fn matching_close(&self, open: usize) -> Result<usize, String> {
        let mut stack = Vec::new();
        for at in open..self.src.len() {
            if self.class[at] != Class::Code {
                continue;
            }
            match self.src.as_bytes()[at] {
                b @ (b'(' | b'[' | b'{') => stack.push(b),
                b @ (b')' | b']' | b'}') => {
                    let want = match b {
                        b')' => b'(',
                        b']' => b'[',
                        _ => b'{',
                    };
                    if stack.pop() != Some(want) {
                        return Err(format!(
                            "mismatched {:?} at line {}",
                            b as char,
                            self.line_of(at)
                        ));
                    }
                    if stack.is_empty() {
                        return Ok(at);
                    }
                }
                _ => {}
            }
        }
        Err(format!(
            "the bracket opened at line {} is never closed",
            self.line_of(open)
        ))
    }

    /// `(start, end)` of the code inside `start..end`, without outer whitespace and comments.
    fn trim(&self, start: usize, end: usize) -> Option<(usize, usize)> {
        let solid = |at: usize| {
            self.class[at] == Class::Str
                || (self.class[at] == Class::Code && !self.src.as_bytes()[at].is_ascii_whitespace())
        };
        let first = (start..end).find(|&at| solid(at))?;
        let last = (start..end).rev().find(|&at| solid(at))?;
        Some((first, last + 1))
    }

    /// The code text of `start..end` with comments dropped and whitespace runs collapsed.
    fn normalized(&self, start: usize, end: usize) -> String {
        let mut out = String::new();
        let mut space = false;
        for (at, c) in self.src[start..end].char_indices() {
            let at = start + at;
            if self.class[at] == Class::Comment
                || (self.class[at] == Class::Code && c.is_whitespace())
            {
                space = true;
                continue;
            }
            if space && !out.is_empty() {
                out.push(' ');
            }
            space = false;
            out.push(c);
        }
        out
    }
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn line_at(src: &str, at: usize) -> usize {
    src[..at.min(src.len())].matches('\n').count() + 1
}

/// The `torch_profiler = torch.profiler.profile(...)` call.
struct ProfileCall {
    /// Offset of `torch.profiler.profile`.
    name_at: usize,
    open: usize,
    close: usize,
}

fn profile_call(lexed: &Lexed<'_>) -> Result<ProfileCall, String> {
    let mut calls = Vec::new();
    for at in lexed.code_words("torch.profiler.profile") {
        let open = lexed.skip_space(at + "torch.profiler.profile".len(), false);
        if lexed.byte(open) != Some(b'(') || !lexed.is_code(open..open + 1) {
            continue;
        }
        // Assigned to `torch_profiler` (`torch_profiler = torch.profiler.profile(`).
        let before = lexed.src[lexed.line_start(at)..at].trim_end();
        let assigned = before
            .strip_suffix('=')
            .filter(|b| !b.ends_with(['=', '!', '<', '>']))
            .map(|b| b.trim_end().ends_with("torch_profiler"))
            .unwrap_or(false);
        if assigned {
            calls.push((at, open));
        }
    }
    match calls.as_slice() {
        [] => Err(
            "no `torch_profiler = torch.profiler.profile(` call in the code (outside strings and \
                   comments); is this TensorRT-LLM's pyexecutor/py_executor.py?"
                .to_string(),
        ),
        [(at, open)] => Ok(ProfileCall {
            name_at: *at,
            open: *open,
            close: lexed.matching_close(*open)?,
        }),
        many => {
            let lines: Vec<String> = many
                .iter()
                .map(|(at, _)| lexed.line_of(*at).to_string())
                .collect();
            Err(format!(
                "{} `torch_profiler = torch.profiler.profile(` calls (lines {}); cannot tell which \
                 one to patch",
                many.len(),
                lines.join(", ")
            ))
        }
    }
}

/// One argument of the call: its trimmed span, and the keyword if it has one.
struct Arg {
    start: usize,
    end: usize,
    keyword: Option<String>,
}

/// The call's arguments, and the offset of a trailing comma after the last one.
fn arguments(lexed: &Lexed<'_>, call: &ProfileCall) -> Result<(Vec<Arg>, Option<usize>), String> {
    let mut depth = 0usize;
    let mut pieces = Vec::new();
    let mut piece_start = call.open + 1;
    let inside = lexed.src.as_bytes()[..call.close].iter().enumerate();
    for (at, byte) in inside.skip(call.open + 1) {
        if lexed.class[at] != Class::Code {
            continue;
        }
        match byte {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            b',' if depth == 0 => {
                pieces.push((piece_start, at));
                piece_start = at + 1;
            }
            _ => {}
        }
    }
    pieces.push((piece_start, call.close));
    let mut args = Vec::new();
    let mut trailing_comma = None;
    let count = pieces.len();
    for (i, (start, end)) in pieces.into_iter().enumerate() {
        match lexed.trim(start, end) {
            Some((s, e)) => {
                let text = &lexed.src[s..e];
                if text.starts_with("**") {
                    return Err(format!(
                        "torch.profiler.profile(...) at line {} unpacks {text}; cannot tell \
                         whether with_stack is already among its keywords",
                        lexed.line_of(s)
                    ));
                }
                args.push(Arg {
                    start: s,
                    end: e,
                    keyword: keyword_of(text),
                });
            }
            // Only the piece after the last comma may be empty: a trailing comma.
            None if i + 1 == count && i > 0 => trailing_comma = Some(start - 1),
            None if count == 1 => {}
            None => {
                return Err(format!(
                    "empty argument in torch.profiler.profile(...) at line {}",
                    lexed.line_of(start)
                ))
            }
        }
    }
    Ok((args, trailing_comma))
}

/// `name` of `name = value` (not `==`).
fn keyword_of(arg: &str) -> Option<String> {
    let name: String = arg
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    let rest = arg[name.len()..].trim_start();
    (!name.is_empty() && rest.starts_with('=') && !rest.starts_with("==")).then_some(name)
}

/// The edit that makes the call record stacks; `None` when it already does.
fn with_stack_edit(lexed: &Lexed<'_>, call: &ProfileCall) -> Result<Option<Edit>, String> {
    let (args, trailing_comma) = arguments(lexed, call)?;
    if let Some(arg) = args
        .iter()
        .find(|a| a.keyword.as_deref() == Some("with_stack"))
    {
        let text = &lexed.src[arg.start..arg.end];
        let eq = text.find('=').expect("a keyword argument has '='");
        let value_start = lexed.skip_space(arg.start + eq + 1, true);
        let value = lexed.normalized(value_start, arg.end);
        if value == "True" {
            return Ok(None);
        }
        return Ok(Some(Edit {
            start: value_start,
            end: arg.end,
            text: "True".to_string(),
        }));
    }
    let Some(last) = args.last() else {
        return Ok(Some(Edit {
            start: call.open + 1,
            end: call.open + 1,
            text: "with_stack=True".to_string(),
        }));
    };
    let one_line = lexed.line_of(call.open) == lexed.line_of(call.close);
    let edit = if one_line {
        match trailing_comma {
            Some(comma) => insert(comma + 1, " with_stack=True,"),
            None => insert(last.end, ", with_stack=True"),
        }
    } else {
        // The new argument lines up with the last one.
        let line_start = lexed.line_start(last.start);
        let lead = &lexed.src[line_start..last.start];
        let pad = if lead.chars().all(char::is_whitespace) {
            lead.to_string()
        } else {
            " ".repeat(lead.chars().count())
        };
        match trailing_comma {
            Some(comma) => insert(comma + 1, &format!("\n{pad}with_stack=True,")),
            None => insert(last.end, &format!(",\n{pad}with_stack=True")),
        }
    };
    Ok(Some(edit))
}

fn insert(at: usize, text: &str) -> Edit {
    Edit {
        start: at,
        end: at,
        text: text.to_string(),
    }
}

/// A `def` line: where it starts, its indent, name and parameter names.
#[derive(Clone, Debug)]
struct Def {
    at: usize,
    name: String,
    params: Vec<String>,
    /// The function's body text, to its end (the next line indented at most as the def).
    body: (usize, usize),
}

impl Def {
    fn layout_name(&self) -> String {
        if self.params.first().map(String::as_str) == Some("self") {
            format!("the PyExecutor.{}(self) method layout", self.name)
        } else {
            format!("the {}(ctx, ...) generator layout", self.name)
        }
    }
}

/// The function whose body holds `at`.
fn enclosing_def(lexed: &Lexed<'_>, at: usize) -> Option<Def> {
    let line_start = lexed.line_start(at);
    let indent_of = |start: usize| {
        lexed.src[start..]
            .bytes()
            .take_while(|b| *b == b' ' || *b == b'\t')
            .count()
    };
    let here = indent_of(line_start);
    let mut defs: Vec<usize> = lexed.code_words("def");
    defs.retain(|&d| d < at);
    for d in defs.into_iter().rev() {
        let start = lexed.line_start(d);
        let prefix = lexed.src[start..d].trim();
        if !(prefix.is_empty() || prefix == "async") {
            continue;
        }
        let indent = indent_of(start);
        if indent >= here {
            continue;
        }
        let name_at = lexed.skip_space(d + 3, false);
        let name: String = lexed.src[name_at..]
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        let open = lexed.skip_space(name_at + name.len(), false);
        if lexed.byte(open) != Some(b'(') {
            return None;
        }
        let close = lexed.matching_close(open).ok()?;
        let params = lexed.src[open + 1..close]
            .split(',')
            .map(|p| {
                p.trim()
                    .trim_start_matches('*')
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect::<String>()
            })
            .filter(|p| !p.is_empty())
            .collect();
        let body_end = body_end(lexed, close, indent);
        return Some(Def {
            at: d,
            name,
            params,
            body: (close, body_end),
        });
    }
    None
}

/// The end of a block whose header ends at `from` and is indented `indent`: the start of
/// the first later code line indented no deeper.
fn body_end(lexed: &Lexed<'_>, from: usize, indent: usize) -> usize {
    let mut at = lexed.src[from..].find('\n').map(|i| from + i + 1);
    while let Some(start) = at {
        let line_end = lexed.src[start..]
            .find('\n')
            .map(|i| start + i)
            .unwrap_or(lexed.src.len());
        let lead = lexed.src[start..line_end]
            .bytes()
            .take_while(|b| *b == b' ' || *b == b'\t')
            .count();
        let first = start + lead;
        let is_code_line = first < line_end && lexed.class[first] == Class::Code;
        if is_code_line && lead <= indent {
            return start;
        }
        at = (line_end < lexed.src.len()).then_some(line_end + 1);
    }
    lexed.src.len()
}

/// `enable_torch_trace = bool(...)` and what the guard needs.
struct Guard {
    /// Offset of `enable_torch_trace`.
    at: usize,
    /// The right-hand side's code span.
    rhs: (usize, usize),
    def: Def,
    /// The rank expression of this layout.
    rank: String,
}

/// The right-hand side this tool knows how to guard.
const UNGUARDED: &str = "bool(torch_trace_path and profile_start_stop)";

fn guard_statement(lexed: &Lexed<'_>) -> Result<Guard, String> {
    let assignments: Vec<(usize, usize)> = lexed
        .code_words("enable_torch_trace")
        .into_iter()
        .filter(|&at| lexed.src[lexed.line_start(at)..at].trim().is_empty())
        .filter_map(|at| {
            let eq = lexed.skip_space(at + "enable_torch_trace".len(), false);
            let is_assign = lexed.byte(eq) == Some(b'=') && lexed.byte(eq + 1) != Some(b'=');
            is_assign.then_some((at, eq))
        })
        .collect();
    let (at, eq) = match assignments.as_slice() {
        [] => {
            return Err(
                "no `enable_torch_trace = ...` assignment in the code; unknown \
                        py_executor.py layout"
                    .to_string(),
            )
        }
        [one] => *one,
        many => {
            return Err(format!(
                "{} `enable_torch_trace = ...` assignments (lines {}); cannot tell which one to \
                 guard",
                many.len(),
                many.iter()
                    .map(|(a, _)| lexed.line_of(*a).to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        }
    };
    let rhs_start = lexed.skip_space(eq + 1, false);
    let rhs_end = logical_line_end(lexed, rhs_start)?;
    let (rhs_start, rhs_end) = lexed.trim(rhs_start, rhs_end).ok_or_else(|| {
        format!(
            "empty enable_torch_trace assignment at line {}",
            lexed.line_of(at)
        )
    })?;
    let def = enclosing_def(lexed, at).ok_or_else(|| {
        format!(
            "enable_torch_trace at line {} is not inside a function; unknown py_executor.py layout",
            lexed.line_of(at)
        )
    })?;
    let body = &lexed.src[def.body.0..def.body.1];
    let rank = if def.params.first().map(String::as_str) == Some("self") {
        if body.contains("self.global_rank") {
            "self.global_rank"
        } else {
            "self.dist.rank"
        }
    } else if def.params.iter().any(|p| p == "ctx") && body.contains("ctx.svc.dist") {
        "ctx.svc.dist.rank"
    } else {
        return Err(format!(
            "enable_torch_trace is set in def {}({}), which is neither the PyExecutor method \
             (self) nor the generator using ctx.svc.dist; cannot tell how to read the rank",
            def.name,
            def.params.join(", ")
        ));
    };
    Ok(Guard {
        at,
        rhs: (rhs_start, rhs_end),
        def,
        rank: rank.to_string(),
    })
}

/// The end of the logical line starting at `from`: the first newline outside brackets,
/// strings and comments, and not after a backslash.
fn logical_line_end(lexed: &Lexed<'_>, from: usize) -> Result<usize, String> {
    let bytes = lexed.src.as_bytes();
    let mut depth = 0usize;
    for at in from..bytes.len() {
        if lexed.class[at] != Class::Code {
            continue;
        }
        match bytes[at] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            b'\n' if depth == 0 && at > 0 && bytes[at - 1] != b'\\' => return Ok(at),
            _ => {}
        }
    }
    if depth == 0 {
        Ok(bytes.len())
    } else {
        Err(format!(
            "unclosed bracket after line {}",
            lexed.line_of(from)
        ))
    }
}

impl Guard {
    /// The edits adding the rank-0 condition; `None` when it is already there.
    fn edit(&self, lexed: &Lexed<'_>) -> Result<Option<Vec<Edit>>, String> {
        let rhs = lexed.normalized(self.rhs.0, self.rhs.1);
        if rhs.replace(' ', "").contains("rank==0") {
            return Ok(None);
        }
        if rhs != UNGUARDED {
            return Err(format!(
                "enable_torch_trace at line {} is `{rhs}`, not `{UNGUARDED}`; not guarded",
                lexed.line_of(self.at)
            ));
        }
        let line_start = lexed.line_start(self.at);
        let indent = &lexed.src[line_start..self.at];
        Ok(Some(vec![
            insert(
                line_start,
                &format!(
                    "{indent}# llm-triage py-executor-override: only rank 0 records the torch \
                     trace.\n"
                ),
            ),
            Edit {
                start: self.rhs.0,
                end: self.rhs.1,
                text: format!(
                    "bool(torch_trace_path and profile_start_stop and {} == 0)",
                    self.rank
                ),
            },
        ]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The method layout (8-space indent, arguments hanging under the open parenthesis),
    /// written for these tests in the shape of TensorRT-LLM's PyExecutor._profiler.
    const METHOD: &str = r#"import os
from contextlib import contextmanager

import torch

TRACE_VAR = "TLLM_TORCH_PROFILE_TRACE"


class PyExecutor:

    def __init__(self, dist):
        self.dist = dist

    @contextmanager
    def _profiler(self):
        torch_trace_path = os.environ.get(TRACE_VAR, None)
        profile_start_stop = os.environ.get("TLLM_PROFILE_START_STOP", None)
        enable_torch_trace = bool(torch_trace_path and profile_start_stop)
        if enable_torch_trace:
            acts = [torch.profiler.ProfilerActivity.CPU,  # cpu ops (",")
                    torch.profiler.ProfilerActivity.CUDA]
            torch_profiler = torch.profiler.profile(activities=acts,
                                                    record_shapes=(1, 2) != (3,),
                                                    with_modules=True)
        yield
"#;

    /// The generator layout (4-space indent, closing parenthesis on its own line).
    const GENERATOR: &str = r#"import os

import torch


def profile_loop(ctx, steps):
    """Profiles steps; see torch.profiler.profile(with_stack=False) docs."""
    torch_trace_path = os.environ.get("TLLM_TORCH_PROFILE_TRACE", None)
    if torch_trace_path is not None:
        base, ext = os.path.splitext(torch_trace_path)
        torch_trace_path = f"{base}-rank-{ctx.svc.dist.rank}{ext}"
    profile_start_stop = os.environ.get("TLLM_PROFILE_START_STOP", None)
    enable_torch_trace = bool(torch_trace_path and profile_start_stop)  # both env vars
    if enable_torch_trace:
        torch_profiler = torch.profiler.profile(
            activities=[
                torch.profiler.ProfilerActivity.CPU,
                torch.profiler.ProfilerActivity.CUDA,
            ],
            record_shapes=True,
            with_modules=True,
        )
    for step in steps:
        yield step
"#;

    #[test]
    fn method_layout_gets_both_edits() {
        let out = override_source(METHOD).unwrap();
        let expected = METHOD
            .replace(
                "                                                    with_modules=True)",
                "                                                    with_modules=True,\n                                                    with_stack=True)",
            )
            .replace(
                "        enable_torch_trace = bool(torch_trace_path and profile_start_stop)\n",
                "        # llm-triage py-executor-override: only rank 0 records the torch trace.\n        enable_torch_trace = bool(torch_trace_path and profile_start_stop and self.dist.rank == 0)\n",
            );
        assert_eq!(out.text, expected);
        assert_eq!(
            out.notes,
            [
                "with_stack=True set in torch.profiler.profile(...) at line 22 (the PyExecutor._profiler(self) method layout)",
                "rank-0 guard added to enable_torch_trace at line 18 (self.dist.rank == 0)",
            ]
        );
    }

    #[test]
    fn generator_layout_gets_both_edits() {
        let out = override_source(GENERATOR).unwrap();
        let expected = GENERATOR
            .replace(
                "            with_modules=True,\n        )",
                "            with_modules=True,\n            with_stack=True,\n        )",
            )
            .replace(
                "    enable_torch_trace = bool(torch_trace_path and profile_start_stop)  # both env vars\n",
                "    # llm-triage py-executor-override: only rank 0 records the torch trace.\n    enable_torch_trace = bool(torch_trace_path and profile_start_stop and ctx.svc.dist.rank == 0)  # both env vars\n",
            );
        assert_eq!(out.text, expected);
        assert!(
            out.notes[0].contains("profile_loop(ctx, ...) generator layout"),
            "{:?}",
            out.notes
        );
    }

    #[test]
    fn newer_method_layout_reads_global_rank() {
        let source = METHOD.replace(
            "        profile_start_stop =",
            "        torch_trace_path = f\"{torch_trace_path}-rank-{self.global_rank}\"\n        profile_start_stop =",
        );
        let out = override_source(&source).unwrap();
        assert!(out
            .text
            .contains("profile_start_stop and self.global_rank == 0)"));
    }

    #[test]
    fn the_override_is_idempotent() {
        for source in [METHOD, GENERATOR] {
            let once = override_source(source).unwrap();
            let twice = override_source(&once.text).unwrap();
            assert_eq!(twice.text, once.text);
            assert_eq!(
                twice.notes.last().map(String::as_str),
                Some("already patched: the output equals the source")
            );
        }
    }

    #[test]
    fn one_line_calls_and_other_with_stack_values() {
        let one_line = METHOD.replace(
            "torch.profiler.profile(activities=acts,\n                                                    record_shapes=(1, 2) != (3,),\n                                                    with_modules=True)",
            "torch.profiler.profile(activities=acts, with_modules=True)",
        );
        let out = override_source(&one_line).unwrap();
        assert!(out.text.contains(
            "torch.profiler.profile(activities=acts, with_modules=True, with_stack=True)"
        ));
        let off = one_line.replace("with_modules=True)", "with_stack=False)");
        let out = override_source(&off).unwrap();
        assert!(out
            .text
            .contains("torch.profiler.profile(activities=acts, with_stack=True)"));
        let empty = one_line.replace("profile(activities=acts, with_modules=True)", "profile()");
        assert!(override_source(&empty)
            .unwrap()
            .text
            .contains("torch.profiler.profile(with_stack=True)"));
    }

    #[test]
    fn unrecognised_input_is_refused_with_the_reason() {
        let cases: [(String, &str); 7] = [
            (
                "print('hello')\n".to_string(),
                "no `torch_profiler = torch.profiler.profile(` call",
            ),
            (
                METHOD.replace(
                    "                                                    with_modules=True)",
                    "                                                    with_modules=True",
                ),
                "never closed",
            ),
            (
                METHOD.replace("(activities=acts,", "(**kwargs,"),
                "unpacks **kwargs",
            ),
            (
                METHOD.replace(
                    "enable_torch_trace = bool(torch_trace_path and profile_start_stop)",
                    "enable_torch_trace = True",
                ),
                "is `True`, not `bool(torch_trace_path and profile_start_stop)`",
            ),
            (
                METHOD.replace("def _profiler(self):", "def _profiler(executor):"),
                "cannot tell how to read the rank",
            ),
            (
                METHOD.replace("TRACE_VAR = \"TLLM", "TRACE_VAR = \"TLLM\n"),
                "unterminated string literal",
            ),
            (
                format!(
                    "{METHOD}\n\ndef again(self):\n    torch_profiler = torch.profiler.profile()\n"
                ),
                "2 `torch_profiler = torch.profiler.profile(` calls (lines 22, 29)",
            ),
        ];
        for (source, reason) in cases {
            let err = override_source(&source).unwrap_err();
            assert!(err.contains(reason), "expected {reason:?} in {err:?}");
        }
    }

    #[test]
    fn strings_and_comments_are_not_code() {
        // The docstring mentions torch.profiler.profile(with_stack=False); it is not a call.
        let lexed = Lexed::new(GENERATOR).unwrap();
        assert_eq!(lexed.code_words("torch.profiler.profile").len(), 1);
        let tricky = "x = 'a \\' ( \" ' + \"\"\"\n ) ' \"\"\" # )\ny = (1)\n";
        let lexed = Lexed::new(tricky).unwrap();
        let open = tricky.rfind('(').unwrap();
        assert_eq!(
            lexed.matching_close(open).unwrap(),
            tricky.rfind(')').unwrap()
        );
        assert_eq!(
            keyword_of("with_stack = True"),
            Some("with_stack".to_string())
        );
        assert_eq!(keyword_of("a == b"), None);
    }
}
