//! Drawing the content search (`/`, [`crate::ui::search`]): its prompt,
//! what each machine answered (a failed one named first on its line),
//! and the hits, one line each: machine, id, what the session is now,
//! when, folder (cut on its left), and the snippet — sanitized with
//! [`ccd_claude::display::line`] first, then its match marked with a
//! style (never an escape a transcript could forge), cut so that the
//! match shows. Its tests are `render`'s (the snapshots sit with the
//! others).

use super::{host_width, scroll};
use crate::shared::cells::{ago, tilde};
use crate::ui::view::View;
use ccd_claude::display::line;
use ccd_claude::display::width::{clip, pad, width};
use ccd_protocol::methods::session::SessionState;
use ccd_protocol::search::SearchHit;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;
use unicode_width::UnicodeWidthChar;

/// What a search hit's session is now, in a word: from the dashboard's
/// row when it lists the session (kept current by events: a hit resumed
/// a moment ago says `held`), else as the search found it. It says what
/// `Enter` will do: attach (`held`), refuse with `o`/`f` offered
/// (`elsewhere`, `unknown`), resume (`dead`), put back and resume
/// (`archived`).
fn hit_state(view: &View, h: &SearchHit) -> &'static str {
    let state = match view.model.row(&h.host, &h.session_id) {
        Some(r) if r.held() => return "held",
        Some(r) => &r.info.state,
        None => &h.state,
    };
    match state {
        SessionState::Live => "elsewhere",
        SessionState::Dead => "dead",
        SessionState::Archived => "archived",
        _ => "unknown",
    }
}

/// The last columns of `s` that fit `max`, `…` first when something was
/// cut.
fn clip_left(s: &str, max: usize) -> String {
    if width(s) <= max {
        return s.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let mut kept: Vec<char> = Vec::new();
    let mut used = 0;
    for c in s.chars().rev() {
        let w = c.width().unwrap_or(0);
        if used + w > max - 1 {
            break;
        }
        used += w;
        kept.push(c);
    }
    let mut out = String::from("…");
    out.extend(kept.into_iter().rev());
    while width(&out) > max {
        out.remove(1);
    }
    out
}

/// A snippet's parts (sanitized) fitted to `room` columns with the match
/// in view: the match first (clipped only when it alone is wider), then
/// what comes before it, cut on its left, keeping at least half of what
/// is left for what follows when that is as long.
pub fn fit_snippet(before: &str, matched: &str, after: &str, room: usize) -> [String; 3] {
    let m = clip(matched, room);
    let left = room - width(&m);
    let b = clip_left(before, left - width(after).min(left / 2));
    let a = clip(after, left - width(&b));
    [b, m, a]
}

/// The content search: its prompt, what each machine answered (a failed
/// one named), and the hits, one line each (machine, session, what it is
/// now, when, folder, what was said with the match marked).
pub(super) fn draw_search(f: &mut Frame, area: Rect, view: &mut View) {
    if area.height == 0 {
        return;
    }
    let w = usize::from(area.width);
    let bold = Style::default().add_modifier(Modifier::BOLD);
    let dim = Style::default().add_modifier(Modifier::DIM);
    let alarm = if view.colour {
        Style::default().fg(Color::Red).add_modifier(Modifier::BOLD)
    } else {
        bold
    };
    let search = &view.search;
    let mut top: Vec<Line> = vec![];
    let cursor = if search.editing { "▏" } else { "" };
    top.push(Line::from(Span::styled(
        clip(&format!(" /{}{cursor}", line(&search.query)), w),
        bold,
    )));
    let hits = search.hits().len();
    let pending: Vec<String> = search.pending().map(|h| line(h).into_owned()).collect();
    let status = match &search.asked {
        None => {
            " words, or \"a phrase\": Enter searches what was said in every session".to_string()
        }
        Some(_) if !pending.is_empty() => {
            format!(" {hits} found so far · searching {}…", pending.join(", "))
        }
        Some(_) if hits == 0 => " no session matches".to_string(),
        Some(_) => format!(
            " {hits} session{} found{}",
            if hits == 1 { "" } else { "s" },
            if search.truncated() {
                " (more matched: add a word)"
            } else {
                ""
            }
        ),
    };
    top.push(Line::from(Span::styled(clip(&status, w), dim)));
    for (host, why) in search.failed() {
        // What matters first: the line is clipped to the width.
        let text = format!(" {} not searched: {}", line(host), line(why));
        top.push(Line::from(Span::styled(clip(&text, w), alarm)));
    }
    let host_w = host_width(view).map(usize::from);
    let folder_w = match w {
        w if w >= 100 => (w / 5).min(32),
        w if w >= 70 => 16,
        _ => 0,
    };
    let mut cols: Vec<(&str, usize)> = vec![];
    if let Some(h) = host_w {
        cols.push(("HOST", h));
    }
    cols.extend([("ID", 8), ("STATE", 9), ("WHEN", 8)]);
    if folder_w > 0 {
        cols.push(("FOLDER", folder_w));
    }
    let fixed: usize = cols.iter().map(|(_, c)| c + 1).sum::<usize>() + 1;
    let said_w = w.saturating_sub(fixed);
    let header = {
        let mut t = String::from(" ");
        for (name, c) in &cols {
            t.push_str(&pad(name, *c));
            t.push(' ');
        }
        t.push_str("WHAT WAS SAID");
        Line::from(Span::styled(clip(&t, w), bold))
    };
    if hits > 0 {
        top.push(header);
    }
    let top_h = (top.len() as u16).min(area.height);
    f.render_widget(
        Paragraph::new(top),
        Rect {
            height: top_h,
            ..area
        },
    );
    let list = Rect {
        y: area.y + top_h,
        height: area.height - top_h,
        ..area
    };
    let height = usize::from(list.height);
    let selected = search.selected_index();
    let offset = scroll(search.offset, selected, height, hits);
    let mut lines: Vec<Line> = vec![];
    for n in offset..(offset + height).min(hits) {
        let h = &search.hits()[n];
        let mut t = String::from(" ");
        let mut cell = |text: &str, c: usize| {
            t.push_str(&pad(&clip(text, c), c));
            t.push(' ');
        };
        if let Some(c) = host_w {
            cell(&line(&h.host), c);
        }
        cell(&line(crate::shared::cells::short_id(&h.session_id)), 8);
        cell(hit_state(view, h), 9);
        let when = h
            .timestamp
            .as_deref()
            .and_then(|t| OffsetDateTime::parse(t, &Rfc3339).ok())
            .map_or_else(|| "-".to_string(), |t| ago(view.now, t));
        cell(&when, 8);
        if folder_w > 0 {
            // Another machine's home is not this one's: `~` only here.
            let folder = h.folder.as_deref().map_or_else(
                || "-".to_string(),
                |c| {
                    if h.host == crate::hosts::LOCAL {
                        tilde(c, view.home.as_deref())
                    } else {
                        c.to_string()
                    }
                },
            );
            // Its end names the project: cut on the left.
            cell(&clip_left(&line(&folder), folder_w), folder_w);
        }
        // Sanitized first, then marked: a transcript cannot forge the mark.
        let role = clip(&format!("{}: ", line(&h.role)), said_w);
        let [b, m, a] = fit_snippet(
            &line(&h.snippet.before),
            &line(&h.snippet.matched),
            &line(&h.snippet.after),
            said_w - width(&role),
        );
        let mut mark = Style::default().add_modifier(Modifier::BOLD | Modifier::UNDERLINED);
        if view.colour {
            mark = mark.fg(Color::Yellow);
        }
        let mut l = Line::from(vec![
            Span::raw(t),
            Span::raw(role),
            Span::raw(b),
            Span::styled(m, mark),
            Span::raw(a),
        ]);
        if Some(n) == selected {
            l = l.style(Style::default().add_modifier(Modifier::REVERSED));
        }
        lines.push(l);
    }
    f.render_widget(Paragraph::new(lines), list);
    view.search.offset = offset;
}
