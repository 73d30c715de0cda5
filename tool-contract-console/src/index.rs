//! What the console knows of a log: an index of its intents' last words, kept up to date by folding
//! in only what its [`LogReader`] read since the last look, so a page is answered from memory, never by
//! reading the whole log again.

use std::collections::{BTreeMap, HashMap};
use std::time::{SystemTime, UNIX_EPOCH};

use tool_contract::IntentKey;
use tool_contract::rules::Word;
use tool_contract::{
    journal::{ApprovalStep, JournalError, LogReader, Recall, Record},
    unstable::parse_rfc3339,
};

/// Records read from a store at a time, while the index catches up.
const BATCH: usize = 50_000;

/// One intent: what the log's reading rule makes of it, and the place of its last record folded.
#[derive(Debug)]
pub struct Intent {
    /// The intent's attempt count and last word.
    pub recall: Recall,
    /// Where its last record folded is stored ([`Batch::records`](tool_contract::journal::Batch)).
    last_place: u64,
}

/// The index of one log.
#[derive(Debug, Default)]
pub struct Index {
    intents: HashMap<IntentKey, Intent>,
    /// Each task's intents, in the order first seen.
    tasks: HashMap<String, Vec<IntentKey>>,
    /// The questions asked before a next `money` attempt and not answered yet, by intent.
    asked: HashMap<IntentKey, Record>,
    /// Stored items that are not records (skipped, as every reader skips them).
    pub unreadable: u64,
    /// Records read.
    pub records: u64,
}

impl Index {
    /// An empty index.
    pub fn new() -> Index {
        Index::default()
    }

    /// Fold in what `reader` read since its last look (everything, the first time); a log replaced
    /// since is indexed again from its start.
    pub async fn catch_up(&mut self, reader: &dyn LogReader) -> Result<(), JournalError> {
        loop {
            let batch = reader.read_more(BATCH).await?;
            if batch.restarted {
                *self = Index::new();
            }
            self.unreadable += batch.unreadable;
            for (place, record) in batch.records {
                self.fold(record, place);
            }
            if !batch.more {
                return Ok(());
            }
        }
    }

    /// Fold one record in, by the log's reading rule. `place` is where it is stored, growing with each
    /// record stored: a record at or before its intent's last place was folded already, and is skipped,
    /// so reading a stretch of the store again changes nothing.
    pub fn fold(&mut self, record: Record, place: u64) {
        if let Some(intent) = self.intents.get(&record.intent_key)
            && intent.last_place >= place
        {
            return;
        }
        self.records += 1;
        if let Some(note) = &record.approval {
            match note.step {
                ApprovalStep::Asked => {
                    self.asked.insert(record.intent_key, record.clone());
                }
                _ => {
                    self.asked.remove(&record.intent_key);
                }
            }
        }
        match self.intents.get_mut(&record.intent_key) {
            Some(intent) => {
                intent.recall.update(&record);
                intent.last_place = place;
            }
            None => {
                self.tasks.entry(record.task.clone()).or_default().push(record.intent_key);
                let key = record.intent_key;
                self.intents.insert(key, Intent { recall: Recall::from_record(record), last_place: place });
            }
        }
    }

    /// The intents in doubt, oldest first.
    pub fn in_doubt(&self) -> Vec<&Recall> {
        let mut open: Vec<&Recall> =
            self.intents.values().map(|i| &i.recall).filter(|r| r.is_unresolved()).collect();
        open.sort_by(|a, b| tool_contract::rules::queue_order(&a.last, &b.last));
        open
    }

    /// The questions waiting for an answer at `now` (asked, unanswered, not past their `until`, and
    /// about the attempt after the intent's highest), oldest first.
    pub fn pending(&self, now: SystemTime) -> Vec<&Record> {
        let now = tool_contract::unstable::rfc3339(now);
        let mut pending: Vec<&Record> = self
            .asked
            .values()
            .filter(|asked| {
                let attempts = self.intent(&asked.intent_key).map_or(0, |r| r.attempts);
                tool_contract::rules::waiting_approval(Some(asked), attempts, &now).is_some()
            })
            .collect();
        pending.sort_by(|a, b| {
            let at = |r: &Record| r.approval.as_ref().map(|n| n.at.clone()).unwrap_or_default();
            (at(a), a.intent_key).cmp(&(at(b), b.intent_key))
        });
        pending
    }

    /// How many intents the log holds.
    pub fn intents(&self) -> usize {
        self.intents.len()
    }

    /// One intent's last word.
    pub fn intent(&self, key: &IntentKey) -> Option<&Recall> {
        self.intents.get(key).map(|i| &i.recall)
    }

    /// A task's intents, in the order first seen.
    pub fn task(&self, task: &str) -> Vec<&Recall> {
        let keys = self.tasks.get(task).map(Vec::as_slice).unwrap_or_default();
        keys.iter().filter_map(|key| self.intent(key)).collect()
    }

    /// The intents whose key starts with `prefix` (hex), at most `limit`.
    pub fn by_prefix(&self, prefix: &str, limit: usize) -> Vec<&Recall> {
        let mut found: Vec<&Recall> = self
            .intents
            .iter()
            .filter(|(key, _)| key.to_string().starts_with(prefix))
            .map(|(_, i)| &i.recall)
            .take(limit)
            .collect();
        found.sort_by(|a, b| a.last.started.cmp(&b.last.started));
        found
    }

    /// The intents whose last attempt started in the last day before `now`, counted by tool and last
    /// word for the last hour and day, and per hour for the chart.
    pub fn recent(&self, now: SystemTime) -> Recent {
        recent_of(self.intents.values().map(|i| &i.recall), now)
    }
}

/// The intents among `recalls` whose last attempt started in the last day before `now`: by (tool, last
/// word) for the last hour and for the day, and by hour of the day (oldest first) and last word, for
/// the chart.
pub fn recent_of<'a>(recalls: impl Iterator<Item = &'a Recall>, now: SystemTime) -> Recent {
    let now = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let mut recent =
        Recent { hour: BTreeMap::new(), day: BTreeMap::new(), hours: vec![[0; WORDS.len()]; 24] };
    for recall in recalls {
        let last = &recall.last;
        let Some(at) = parse_rfc3339(&last.started) else { continue };
        let at = at.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let ago = now.saturating_sub(at);
        if ago >= 24 * 3600 {
            continue;
        }
        let word = last_word(recall);
        let slot = WORDS.iter().position(|w| *w == word).unwrap_or(0);
        recent.hours[23 - (ago / 3600) as usize][slot] += 1;
        *recent.day.entry((last.call.clone(), word)).or_default() += 1;
        if ago < 3600 {
            *recent.hour.entry((last.call.clone(), word)).or_default() += 1;
        }
    }
    recent
}

/// What ended lately: see [`Index::recent`].
#[derive(Debug)]
pub struct Recent {
    /// Intents by (tool, last word), last hour.
    pub hour: BTreeMap<(String, &'static str), u32>,
    /// Intents by (tool, last word), last day.
    pub day: BTreeMap<(String, &'static str), u32>,
    /// Intents per hour of the last day, oldest first, by last word (in the order of [`WORDS`]).
    pub hours: Vec<[u32; WORDS.len()]>,
}

/// An intent's last word, as the overview counts it: the one vocabulary of every reader
/// ([`tool_contract::rules::last_word`]).
pub fn last_word(recall: &Recall) -> &'static str {
    tool_contract::rules::last_word(recall).as_str()
}

/// The last words the overview counts, in the chart's order ([`tool_contract::rules::Word::ALL`]).
pub const WORDS: [&str; Word::ALL.len()] = {
    let mut words = [""; Word::ALL.len()];
    let mut i = 0;
    while i < words.len() {
        words[i] = Word::ALL[i].as_str();
        i += 1;
    }
    words
};

#[cfg(test)]
mod tests {
    use super::*;
    use tool_contract::Outcome;
    use tool_contract::journal::{HEADER, Phase};

    fn line(task: &str, attempt: u32, phase: Phase, outcome: Option<Outcome>) -> String {
        let key = tool_contract::key::Intent::new(task, "agent", "post_notice", "thread-9").key();
        let record = Record {
            phase,
            task: task.into(),
            call: "post_notice".into(),
            intent_key: key,
            attempt,
            attempt_id: format!("{task}-a{attempt}"),
            started: "2026-12-01T05:12:04Z".into(),
            budget_left_s: 30,
            outcome,
            effect_applied: outcome.map(|o| match o {
                Outcome::Ok => tool_contract::Applied::Yes,
                _ => tool_contract::Applied::Unknown,
            }),
            probe: None,
            message: outcome.map(|o| format!("ended {o}")),
            retry_at: None,
            sent_by: None,
            args: None,
            value: None,
            settled: None,
            approval: None,
        };
        serde_json::to_string(&record).unwrap() + "\n"
    }

    #[tokio::test]
    async fn the_index_reads_what_was_appended_a_torn_line_later_and_another_file_again() {
        let dir = std::env::temp_dir().join(format!("tc-console-index-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("attempts.log");
        std::fs::write(&path, format!("{HEADER}\n{}", line("a", 1, Phase::Start, None))).unwrap();
        let reader = tool_contract::journal::file::FileReader::new(&path);
        let mut index = Index::new();
        index.catch_up(&reader).await.unwrap();
        assert_eq!((index.intents(), index.in_doubt().len()), (1, 1));
        // An end record, then half a line: the half is read once it is whole.
        let end = line("a", 1, Phase::End, Some(Outcome::Ok));
        let half = line("b", 1, Phase::Start, None);
        let (first, rest) = half.split_at(half.len() / 2);
        let mut file = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        std::io::Write::write_all(&mut file, format!("{end}{first}").as_bytes()).unwrap();
        index.catch_up(&reader).await.unwrap();
        assert_eq!((index.intents(), index.in_doubt().len(), index.unreadable), (1, 0, 0));
        std::io::Write::write_all(&mut file, rest.as_bytes()).unwrap();
        index.catch_up(&reader).await.unwrap();
        assert_eq!((index.intents(), index.in_doubt().len(), index.unreadable), (2, 1, 0));
        // Another file renamed over it, longer than what was read: read again from the start.
        let other = dir.join("other.log");
        let text = format!(
            "{HEADER}\n{}{}{}",
            line("c", 1, Phase::Start, None),
            end,
            line("d", 1, Phase::Start, None)
        );
        std::fs::write(&other, text).unwrap();
        std::fs::rename(&other, &path).unwrap();
        index.catch_up(&reader).await.unwrap();
        assert_eq!(index.intents(), 3, "c, a and d: b is gone with the old file");
        assert!(index.task("b").is_empty());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
