//! The macOS `procStart` form: `ps -o lstart=` output in UTC and the C
//! locale, e.g. `"Thu Jul  9 04:18:26 2026"`. The parser is platform
//! independent so it is tested everywhere; only the probe is macOS-only.

use time::{Date, Month, PrimitiveDateTime, Time};

/// Parses an `lstart` string to unix seconds (UTC). Whitespace runs are
/// insignificant; the weekday is checked against the date.
pub fn parse_lstart(s: &str) -> Option<i64> {
    let mut parts = s.split_ascii_whitespace();
    let weekday = parts.next()?;
    let month = month_from_abbrev(parts.next()?)?;
    let day: u8 = parts.next()?.parse().ok()?;
    let clock = parts.next()?;
    let year: i32 = parts.next()?.parse().ok()?;
    if parts.next().is_some() {
        return None;
    }
    let mut hms = clock.split(':');
    let h: u8 = hms.next()?.parse().ok()?;
    let m: u8 = hms.next()?.parse().ok()?;
    let sec: u8 = hms.next()?.parse().ok()?;
    if hms.next().is_some() {
        return None;
    }
    let date = Date::from_calendar_date(year, month, day).ok()?;
    if !date.weekday().to_string().starts_with(weekday) || weekday.len() != 3 {
        return None;
    }
    let dt = PrimitiveDateTime::new(date, Time::from_hms(h, m, sec).ok()?);
    Some(dt.assume_utc().unix_timestamp())
}

fn month_from_abbrev(s: &str) -> Option<Month> {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let idx = MONTHS.iter().position(|m| *m == s)?;
    Month::try_from(idx as u8 + 1).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documented_example() {
        // 2026-07-09T04:18:26Z
        assert_eq!(
            parse_lstart("Thu Jul  9 04:18:26 2026"),
            Some(1_783_570_706)
        );
        assert_eq!(
            parse_lstart("  Thu Jul 9 04:18:26 2026\n"),
            Some(1_783_570_706)
        );
    }

    #[test]
    fn rejects_malformed() {
        for s in [
            "",
            "9989",
            "Fri Jul  9 04:18:26 2026", // wrong weekday
            "Thu Jly  9 04:18:26 2026",
            "Thu Jul 32 04:18:26 2026",
            "Thu Jul  9 04:18 2026",
            "Thu Jul  9 04:18:26 2026 extra",
        ] {
            assert_eq!(parse_lstart(s), None, "{s:?}");
        }
    }
}
