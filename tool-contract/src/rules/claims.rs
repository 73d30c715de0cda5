//! The claim's rules: who gets an intent's claim, the fence on the records written about its
//! attempts, and the budget a start needs. The embedded stores ([`crate::journal`]'s leases) and the
//! engine call them; PostgreSQL's store states them in SQL, held to them by the store suite.

use std::fmt;
use std::time::Duration;

use crate::records::Phase;

/// An unexpired or expired claim on an intent, as the claim's rules read it: its owner, until when
/// its lease runs (on the store's clock), and the attempt its owner started under it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Holder<O, T> {
    /// Who holds the claim.
    pub owner: O,
    /// When its lease ends, on the store's clock.
    pub until: T,
    /// The attempt the owner started under this claim, if any.
    pub started: Option<u32>,
}

/// What a store does with a claim ([`claim`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claiming<O, T> {
    /// The intent is free (never claimed, released, or its lease ran out): a new claim, with nothing
    /// started under it.
    Take,
    /// The caller already holds it: the lease is renewed and keeps what the caller started.
    Renew,
    /// Another owner holds an unexpired claim, until `until`.
    Busy {
        /// The holder.
        holder: O,
        /// When its lease ends.
        until: T,
    },
    /// The claim reached the store after its caller's deadline: it takes nothing, so a caller that
    /// gave up blocks nobody.
    Late,
}

/// The claim rule: what a store does when `owner` asks for the intent at `now` (its own clock), the
/// intent's claim being `holder`, for a caller that gives up at `deadline` (on the store's clock;
/// `None` when the caller answers in the same process and cannot be gone).
pub fn claim<O: PartialEq + Clone, T: Ord + Copy>(
    holder: Option<&Holder<O, T>>,
    owner: &O,
    now: T,
    deadline: Option<T>,
) -> Claiming<O, T> {
    if deadline.is_some_and(|deadline| now >= deadline) {
        return Claiming::Late;
    }
    match holder {
        Some(held) if held.owner != *owner && held.until > now => {
            Claiming::Busy { holder: held.owner.clone(), until: held.until }
        }
        Some(held) if held.owner == *owner => Claiming::Renew,
        _ => Claiming::Take,
    }
}

/// Why the fence refused a record ([`fence`]); its text says it to the writer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fenced<O> {
    /// The writer holds no claim on the intent.
    NoClaim(O),
    /// Another owner holds it.
    OtherHolder {
        /// The holder.
        holder: O,
        /// The writer.
        writer: O,
    },
    /// The writer's claim has run out.
    Expired(O),
    /// A start must be of the attempt after the highest recorded.
    NotNext {
        /// The highest attempt recorded.
        highest: u32,
    },
    /// Only the highest attempt can be settled.
    NotHighestSettled {
        /// The highest attempt recorded.
        highest: u32,
    },
    /// An end from a writer that did not start the attempt, and is not a probe's verdict on the
    /// highest attempt.
    NotStarter {
        /// The writer.
        writer: O,
        /// The attempt the end is about.
        attempt: u32,
        /// The highest attempt recorded.
        highest: u32,
    },
    /// An approval or MCP task record is not fenced: it is not an attempt's.
    NotAnAttempt,
}

impl<O: fmt::Display> fmt::Display for Fenced<O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fenced::NoClaim(writer) => write!(f, "{writer} holds no claim on the intent"),
            Fenced::OtherHolder { holder, writer } => {
                write!(f, "the intent is claimed by {holder}, not {writer}")
            }
            Fenced::Expired(writer) => write!(f, "the claim of {writer} has expired"),
            Fenced::NotNext { highest } => write!(
                f,
                "attempt {highest} is the highest recorded, so the next is {}",
                highest.saturating_add(1)
            ),
            Fenced::NotHighestSettled { highest } => {
                write!(f, "attempt {highest} is the highest recorded: only it can be settled")
            }
            Fenced::NotStarter { writer, attempt, highest } => write!(
                f,
                "{writer} did not start attempt {attempt}: only its starter writes its end, and the \
                 intent's holder only a probe's verdict on the highest attempt ({highest})"
            ),
            Fenced::NotAnAttempt => f.write_str(
                "an approval or MCP task record is not an attempt's: it is written unfenced (`Approvals::approval_step`, `Journal::append`)",
            ),
        }
    }
}

/// The fence: whether `writer` may write a record of phase `phase` about attempt `attempt` (a probe's
/// verdict when `probe`) at `now`, the intent's claim being `holder` and `highest` the highest attempt
/// recorded. Only the holder of an unexpired claim writes about an attempt; a start only for
/// attempt = `highest` + 1 (the attempt is then the holder's: the store keeps it as
/// [`Holder::started`]); a settlement only of the highest attempt; an end only for the attempt the
/// holder started, or, as a probe's verdict, for the highest attempt, which the holder resolves. So a
/// record held back and delivered late, after the claim moved on, changes nothing.
#[allow(clippy::too_many_arguments)]
pub fn fence<O: PartialEq + Clone, T: Ord>(
    holder: Option<&Holder<O, T>>,
    writer: &O,
    phase: Phase,
    attempt: u32,
    probe: bool,
    highest: u32,
    now: T,
) -> Result<(), Fenced<O>> {
    let held = match holder {
        None => return Err(Fenced::NoClaim(writer.clone())),
        Some(held) if held.owner != *writer => {
            return Err(Fenced::OtherHolder { holder: held.owner.clone(), writer: writer.clone() });
        }
        Some(held) if held.until <= now => return Err(Fenced::Expired(writer.clone())),
        Some(held) => held,
    };
    match phase {
        Phase::Start if attempt != highest.saturating_add(1) => Err(Fenced::NotNext { highest }),
        Phase::Start => Ok(()),
        // A person's verdict on the attempt in doubt, by the holder of the claim.
        Phase::Settled if attempt == highest => Ok(()),
        Phase::Settled => Err(Fenced::NotHighestSettled { highest }),
        Phase::End if held.started == Some(attempt) => Ok(()),
        Phase::End if probe && attempt == highest => Ok(()),
        Phase::End => Err(Fenced::NotStarter { writer: writer.clone(), attempt, highest }),
        Phase::Approval | Phase::McpTask => Err(Fenced::NotAnAttempt),
    }
}

/// The budget's rule for a start: an attempt may start with `left` of the budget only when something
/// is left and at least the tool's `floor` (with no floor, an empty budget still refuses: an attempt
/// that could land and never be resolved).
pub fn may_start(left: Duration, floor: Duration) -> bool {
    !left.is_zero() && left >= floor
}

/// The budget's rule for waiting on a claim another owner holds: a call with `left` of its budget
/// waits `nap` more only if it could still start an attempt of at least the tool's `floor` after it.
pub fn may_wait_for_claim(nap: Duration, floor: Duration, left: Duration) -> bool {
    nap.saturating_add(floor) < left
}

#[cfg(test)]
mod tests {
    use super::*;
    use Phase::{Approval, End, Settled, Start};

    #[test]
    fn the_claim_as_a_table() {
        let held = |owner: &'static str, until: u32| Holder { owner, until, started: Some(1) };
        let table = [
            (None, "a", 5, None, Claiming::Take),
            (Some(held("a", 9)), "a", 5, None, Claiming::Renew),
            (Some(held("a", 3)), "a", 5, None, Claiming::Renew),
            (Some(held("b", 9)), "a", 5, None, Claiming::Busy { holder: "b", until: 9 }),
            (Some(held("b", 5)), "a", 5, None, Claiming::Take),
            (None, "a", 5, Some(6), Claiming::Take),
            (None, "a", 5, Some(5), Claiming::Late),
            (Some(held("a", 9)), "a", 7, Some(6), Claiming::Late),
        ];
        for (holder, owner, now, deadline, expected) in table {
            assert_eq!(claim(holder.as_ref(), &owner, now, deadline), expected, "{holder:?} {owner} {now}");
        }
    }

    #[test]
    fn the_fence_as_a_table() {
        let a = Holder { owner: "a", until: 10, started: Some(2) };
        let ok = Ok(());
        // (holder, writer, phase, attempt, probe, highest, now, accepted?)
        let table = [
            (Some(a), "a", Start, 3, false, 2, 5, ok.clone()),
            (Some(a), "a", Start, 2, false, 2, 5, Err(Fenced::NotNext { highest: 2 })),
            (Some(a), "a", End, 2, false, 2, 5, ok.clone()),
            (
                Some(a),
                "a",
                End,
                1,
                false,
                2,
                5,
                Err(Fenced::NotStarter { writer: "a", attempt: 1, highest: 2 }),
            ),
            (Some(a), "a", End, 2, false, 2, 10, Err(Fenced::Expired("a"))),
            (Some(a), "b", End, 2, true, 2, 5, Err(Fenced::OtherHolder { holder: "a", writer: "b" })),
            (None, "a", End, 2, true, 2, 5, Err(Fenced::NoClaim("a"))),
            (Some(Holder { started: None, ..a }), "a", End, 2, true, 2, 5, ok.clone()),
            (
                Some(Holder { started: None, ..a }),
                "a",
                End,
                1,
                true,
                2,
                5,
                Err(Fenced::NotStarter { writer: "a", attempt: 1, highest: 2 }),
            ),
            (Some(a), "a", Settled, 2, false, 2, 5, ok.clone()),
            (Some(a), "a", Settled, 1, false, 2, 5, Err(Fenced::NotHighestSettled { highest: 2 })),
            (Some(a), "a", Approval, 2, false, 2, 5, Err(Fenced::NotAnAttempt)),
        ];
        for (holder, writer, phase, attempt, probe, highest, now, expected) in table {
            assert_eq!(
                fence(holder.as_ref(), &writer, phase, attempt, probe, highest, now),
                expected,
                "{writer} {phase:?} a{attempt}"
            );
        }
    }

    #[test]
    fn the_budget_rules_for_a_start() {
        let s = Duration::from_secs;
        assert!(may_start(s(2), s(2)) && may_start(s(1), Duration::ZERO));
        assert!(!may_start(s(1), s(2)) && !may_start(Duration::ZERO, Duration::ZERO));
        assert!(may_wait_for_claim(s(1), s(2), s(4)));
        assert!(!may_wait_for_claim(s(2), s(2), s(4)), "the wait and the floor must fit strictly");
    }
}
