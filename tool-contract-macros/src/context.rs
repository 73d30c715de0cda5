//! Where the attribute stands. A tool cannot live in a trait impl (its wrapper takes a `&Task` and
//! returns a `Report`, which the trait's method does not, and its companions are no members of the
//! trait), but an attribute sees only its function. So it reads the lines of its source file before
//! the function, finds the block that encloses it, and says so once, on the attribute, instead of
//! the compiler's errors about items it never wrote.
//!
//! Anything it cannot read (a function made by another macro, a file it cannot open) is taken as not
//! in a trait impl: the compiler's own errors then follow, as they would without this check.

use proc_macro2::Span;
use syn::ItemFn;

/// The header of the trait impl that encloses `func` (`impl Pricing for Shop`) and its self type, if
/// one does.
pub fn trait_impl(func: &ItemFn) -> Option<(String, String)> {
    if !proc_macro::is_available() {
        return None;
    }
    let span = func.sig.fn_token.span.unwrap();
    let file = span.local_file()?;
    let line = span.start().line();
    let text = std::fs::read_to_string(file).ok()?;
    let offset = line_offset(&text, line)?;
    let header = enclosing_header(&text[..offset])?;
    let item: syn::ItemImpl = syn::parse_str(&format!("{header} {{}}")).ok()?;
    let (_, path, _) = item.trait_.as_ref()?;
    let self_ty = &item.self_ty;
    let written =
        |tokens: proc_macro2::TokenStream| tokens.to_string().replace(" < ", "<").replace(" >", ">");
    let header = format!("impl {} for {}", written(quote::quote!(#path)), written(quote::quote!(#self_ty)));
    Some((header, written(quote::quote!(#self_ty))))
}

/// The byte offset where 1-based `line` begins.
fn line_offset(text: &str, line: usize) -> Option<usize> {
    if line <= 1 {
        return Some(0);
    }
    text.match_indices('\n').nth(line - 2).map(|(at, _)| at + 1)
}

/// The text between the last item boundary and the innermost `{` still open at the end of `before`:
/// the header of the block the end of `before` stands in. Comments, strings and character literals are
/// skipped, so a brace in them counts for nothing.
fn enclosing_header(before: &str) -> Option<&str> {
    let bytes = before.as_bytes();
    // Each open `{`: where it is, and where the text before it (its header) begins.
    let mut open: Vec<(usize, usize)> = Vec::new();
    let mut boundary = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                i = before[i..].find('\n').map_or(bytes.len(), |end| i + end);
                continue;
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i = skip_block_comment(bytes, i)?;
                continue;
            }
            b'"' => {
                i = skip_string(bytes, i + 1)?;
                continue;
            }
            b'r' if raw_string_start(bytes, i).is_some() => {
                i = raw_string_start(bytes, i)
                    .and_then(|(hashes, body)| skip_raw_string(before, body, hashes))?;
                continue;
            }
            b'\'' => {
                i = skip_char(bytes, i);
                continue;
            }
            b'{' => {
                open.push((i, boundary));
                boundary = i + 1;
            }
            b'}' => {
                open.pop()?;
                boundary = i + 1;
            }
            b';' => boundary = i + 1,
            _ => {}
        }
        i += 1;
    }
    let &(at, from) = open.last()?;
    Some(before[from..at].trim())
}

fn skip_block_comment(bytes: &[u8], from: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut i = from;
    while i + 1 < bytes.len() {
        match (bytes[i], bytes[i + 1]) {
            (b'/', b'*') => {
                depth += 1;
                i += 2;
            }
            (b'*', b'/') => {
                depth -= 1;
                i += 2;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => i += 1,
        }
    }
    None
}

/// The index after the closing quote of a string whose contents begin at `from`.
fn skip_string(bytes: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
    None
}

/// At `r"`, `r#"`, ... (and not inside an identifier): the number of `#` and where the contents begin.
fn raw_string_start(bytes: &[u8], at: usize) -> Option<(usize, usize)> {
    if at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_') {
        return None;
    }
    let hashes = bytes[at + 1..].iter().take_while(|&&b| b == b'#').count();
    (bytes.get(at + 1 + hashes) == Some(&b'"')).then_some((hashes, at + 2 + hashes))
}

fn skip_raw_string(text: &str, from: usize, hashes: usize) -> Option<usize> {
    let end = format!("\"{}", "#".repeat(hashes));
    text[from..].find(&end).map(|at| from + at + end.len())
}

/// After a character literal (`'{'`, `'\''`, `'\u{7b}'`), or after the quote of a lifetime.
fn skip_char(bytes: &[u8], at: usize) -> usize {
    match (bytes.get(at + 1), bytes.get(at + 2)) {
        (Some(b'\\'), _) => {
            let mut i = at + 2;
            while i < bytes.len() && bytes[i] != b'\'' {
                i += 1;
            }
            i + 1
        }
        (Some(_), Some(b'\'')) => at + 3,
        // A multi-byte character: up to the closing quote within four bytes.
        (Some(&b), _) if b >= 0x80 => {
            (at + 2..(at + 6).min(bytes.len())).find(|&i| bytes[i] == b'\'').map_or(at + 1, |i| i + 1)
        }
        _ => at + 1,
    }
}

/// The error the attribute gives in a trait impl, on the attribute.
pub fn in_trait_impl(func: &ItemFn, header: &str, self_ty: &str) -> syn::Error {
    let name = &func.sig.ident;
    syn::Error::new(
        Span::call_site(),
        format!(
            "`#[tool]` cannot be used in a trait impl (`{header}`): the tool `{name}` takes a `&Task` and \
             returns a `Report`, which the trait's method does not; move `{name}` with its attribute to an \
             inherent impl (`impl {self_ty} {{ .. }}`) and call it from the trait's method, or by name \
             through a `Toolbox`"
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_enclosing_block_is_found_past_comments_strings_and_characters() {
        let source = "trait Pricing { fn p(&self); }\n\
            // impl Fake for Shop {\n\
            impl<T: Clone> Pricing for Shop<T> where T: for<'a> From<&'a str> {\n\
                const BRACE: char = '{';\n\
                const TEXT: &str = \"}{\";\n\
                const RAW: &str = r#\"}\"#;\n\
                /* } */\n\
                fn other<'a>(&'a self) -> &'a str { \"x\" }\n";
        let header = enclosing_header(source).unwrap();
        assert!(
            header.ends_with("impl<T: Clone> Pricing for Shop<T> where T: for<'a> From<&'a str>"),
            "{header}"
        );
        let item: syn::ItemImpl = syn::parse_str(&format!("{header} {{}}")).unwrap();
        assert!(item.trait_.is_some());
        let inherent = "impl<T> Shop<T> where T: for<'a> Fn(&'a str) {\n    fn a(&self) {}\n";
        let header = enclosing_header(inherent).unwrap();
        let item: syn::ItemImpl = syn::parse_str(&format!("{header} {{}}")).unwrap();
        assert!(item.trait_.is_none(), "{header}");
        assert_eq!(enclosing_header("fn main() {}\n"), None, "at the top level");
        assert_eq!(line_offset("a\nb\nc", 3), Some(4));
    }
}
