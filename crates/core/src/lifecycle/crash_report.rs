//! One line on stderr when the process crashes: the signal, the faulting address, the library and
//! offset of the instruction, and whether the thread was inside kreplay's handling of a CUDA
//! call, so that a crash under kreplay says at once where it happened.
//!
//! Runs in the crash handler: no allocation, no lock, only async-signal-safe system calls (open,
//! read, close of `/proc/self/maps`; poll and write of stderr). The write waits for stderr at
//! most [`STDERR_WAIT_MS`] (a pipe nobody reads must not hold a crashing process); the line is
//! shorter than a pipe's atomic write.

/// How long the report waits for stderr to take it.
const STDERR_WAIT_MS: libc::c_int = 100;

/// A fixed buffer the line is put together in.
pub(super) struct Line {
    bytes: [u8; 480],
    len: usize,
}

impl Line {
    pub(super) fn new() -> Line {
        Line {
            bytes: [0; 480],
            len: 0,
        }
    }

    pub(super) fn push(&mut self, text: &[u8]) {
        let n = text.len().min(self.bytes.len() - self.len);
        self.bytes[self.len..self.len + n].copy_from_slice(&text[..n]);
        self.len += n;
    }

    pub(super) fn hex(&mut self, value: u64) {
        let mut digits = [0u8; 18];
        let mut at = digits.len();
        let mut v = value;
        loop {
            at -= 1;
            digits[at] = b"0123456789abcdef"[(v & 15) as usize];
            v >>= 4;
            if v == 0 {
                break;
            }
        }
        at -= 2;
        digits[at] = b'0';
        digits[at + 1] = b'x';
        self.push(&digits[at..]);
    }

    pub(super) fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// Where `pc` lies in the mappings `read` yields (the text of `/proc/self/maps`, a chunk per
/// call, 0 at its end): the mapped file's name (its last component, `[anon]` without one) and
/// the offset of `pc` in that file, written into `line`. False when no mapping holds it.
pub(super) fn find_mapping(
    pc: u64,
    mut read: impl FnMut(&mut [u8]) -> isize,
    line: &mut Line,
) -> bool {
    // One mapping's line at a time; a longer line (a very long path) is cut, which only
    // shortens the name.
    let mut buffer = [0u8; 1024];
    let mut held = 0;
    loop {
        let n = read(&mut buffer[held..]);
        let end = held + n.max(0) as usize;
        let mut start = 0;
        while let Some(newline) = buffer[start..end].iter().position(|&b| b == b'\n') {
            if in_mapping(pc, &buffer[start..start + newline], line) {
                return true;
            }
            start += newline + 1;
        }
        if n <= 0 {
            return start < end && in_mapping(pc, &buffer[start..end], line);
        }
        // Keep the unfinished line; a line longer than the buffer is cut.
        buffer.copy_within(start..end, 0);
        held = end - start;
        if held == buffer.len() {
            if in_mapping(pc, &buffer[..held], line) {
                return true;
            }
            held = 0;
        }
    }
}

/// `start-end perms offset dev inode path`: whether `pc` is in it, then its file and offset.
/// The path is the rest of the line (it may hold spaces).
fn in_mapping(pc: u64, text: &[u8], line: &mut Line) -> bool {
    let mut rest = text;
    let mut field = || {
        let start = rest.iter().position(|&b| b != b' ').unwrap_or(rest.len());
        rest = &rest[start..];
        let end = rest.iter().position(|&b| b == b' ').unwrap_or(rest.len());
        let (word, after) = rest.split_at(end);
        rest = after;
        word
    };
    let range = field();
    let Some(dash) = range.iter().position(|&b| b == b'-') else {
        return false;
    };
    let (Some(start), Some(end)) = (parse_hex(&range[..dash]), parse_hex(&range[dash + 1..]))
    else {
        return false;
    };
    if pc < start || pc >= end {
        return false;
    }
    let _perms = field();
    let offset = parse_hex(field()).unwrap_or(0);
    let (_dev, _inode) = (field(), field());
    let path = rest.trim_ascii();
    let path: &[u8] = if path.is_empty() { b"[anon]" } else { path };
    let name = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
    line.push(name);
    line.push(b"+");
    line.hex(pc - start + offset);
    true
}

fn parse_hex(text: &[u8]) -> Option<u64> {
    if text.is_empty() || text.len() > 16 {
        return None;
    }
    text.iter().try_fold(0u64, |value, &b| {
        let digit = (b as char).to_digit(16)?;
        Some(value << 4 | u64::from(digit))
    })
}

/// The faulting instruction's address in `context` (0 where the architecture is not known).
///
/// # Safety
/// `context` is the `ucontext_t` the kernel passed to an `SA_SIGINFO` handler.
unsafe fn instruction(context: *mut libc::c_void) -> u64 {
    if context.is_null() {
        return 0;
    }
    let context = context as *const libc::ucontext_t;
    #[cfg(target_arch = "x86_64")]
    {
        (*context).uc_mcontext.gregs[libc::REG_RIP as usize] as u64
    }
    #[cfg(target_arch = "aarch64")]
    {
        (*context).uc_mcontext.pc
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let _ = context;
        0
    }
}

fn signal_name(signal: libc::c_int) -> &'static [u8] {
    match signal {
        libc::SIGSEGV => b"SIGSEGV",
        libc::SIGBUS => b"SIGBUS",
        libc::SIGILL => b"SIGILL",
        libc::SIGFPE => b"SIGFPE",
        _ => b"a crash signal",
    }
}

/// The report of a crash by `signal` (`info` and `context` as the kernel passed them) on a
/// thread `inside` kreplay's handling of a CUDA call or not, written to stderr.
///
/// # Safety
/// In an `SA_SIGINFO` handler, with the kernel's `info` and `context`.
pub(super) unsafe fn report(
    signal: libc::c_int,
    info: *const libc::siginfo_t,
    context: *mut libc::c_void,
    inside: bool,
) {
    let mut line = Line::new();
    line.push(b"kreplay: the application crashed: ");
    line.push(signal_name(signal));
    let faulted = !info.is_null() && (*info).si_code > 0;
    if !faulted {
        line.push(b" sent by a process (kill or raise)");
    } else {
        line.push(b" at address ");
        line.hex((*info).si_addr() as u64);
        let pc = instruction(context);
        if pc != 0 {
            line.push(b", instruction ");
            let path = c"/proc/self/maps";
            let fd = libc::open(path.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC);
            let found = fd >= 0
                && find_mapping(
                    pc,
                    |buffer| libc::read(fd, buffer.as_mut_ptr().cast(), buffer.len()),
                    &mut line,
                );
            if fd >= 0 {
                libc::close(fd);
            }
            if !found {
                line.hex(pc);
            }
        }
    }
    line.push(if inside {
        b", on a thread inside a CUDA call kreplay was handling (a launch or a call it replays around)\n"
    } else {
        b", on a thread outside kreplay's handling of CUDA calls\n"
    });
    let mut ready = libc::pollfd {
        fd: 2,
        events: libc::POLLOUT,
        revents: 0,
    };
    if libc::poll(&mut ready, 1, STDERR_WAIT_MS) == 1 && ready.revents & libc::POLLOUT != 0 {
        let bytes = line.as_bytes();
        libc::write(2, bytes.as_ptr().cast(), bytes.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &[u8] = b"55d0c0000000-55d0c0100000 r-xp 00000000 08:01 131 /usr/bin/python3.12
7f0000000000-7f0000400000 r--p 00000000 08:01 200 /usr/local/nvidia/lib64/libcuda.so.1
7f0000400000-7f0000c00000 r-xp 00400000 08:01 200 /usr/local/nvidia/lib64/libcuda.so.1
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]
7ffd00100000-7ffd00200000 rw-p 00000000 00:00 0
7ffe00000000-7ffe00001000 r-xp 00002000 08:01 300 /opt/my tools/lib x.so (deleted)
";

    /// `MAPS` read `chunk` bytes at a time, as `read(2)` may give it.
    fn reader(chunk: usize) -> impl FnMut(&mut [u8]) -> isize {
        let mut at = 0;
        move |buffer: &mut [u8]| {
            let n = chunk.min(buffer.len()).min(MAPS.len() - at);
            buffer[..n].copy_from_slice(&MAPS[at..at + n]);
            at += n;
            n as isize
        }
    }

    fn found(pc: u64, chunk: usize) -> Option<String> {
        let mut line = Line::new();
        find_mapping(pc, reader(chunk), &mut line)
            .then(|| String::from_utf8(line.as_bytes().to_vec()).unwrap())
    }

    #[test]
    fn the_instruction_is_named_by_its_file_and_offset_in_it() {
        for chunk in [1, 7, 64, 4096] {
            assert_eq!(
                found(0x7f00_004b_84a3, chunk).as_deref(),
                Some("libcuda.so.1+0x4b84a3"),
                "chunks of {chunk}"
            );
            assert_eq!(
                found(0x55d0_c000_0010, chunk).as_deref(),
                Some("python3.12+0x10")
            );
            assert_eq!(
                found(0x7ffd_0000_0008, chunk).as_deref(),
                Some("[stack]+0x8")
            );
            assert_eq!(
                found(0x7ffd_0010_0004, chunk).as_deref(),
                Some("[anon]+0x4")
            );
            assert_eq!(
                found(0x7ffe_0000_0010, chunk).as_deref(),
                Some("lib x.so (deleted)+0x2010")
            );
            assert_eq!(found(0x1000, chunk), None);
        }
    }

    #[test]
    fn a_line_holds_text_and_hex_and_never_overflows() {
        let mut line = Line::new();
        line.push(b"a ");
        line.hex(0);
        line.push(b" ");
        line.hex(u64::MAX);
        assert_eq!(line.as_bytes(), b"a 0x0 0xffffffffffffffff");
        for _ in 0..100 {
            line.push(b"0123456789");
        }
        assert_eq!(line.as_bytes().len(), 480);
    }
}
