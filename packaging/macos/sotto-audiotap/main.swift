// sotto-audiotap: what this Mac plays, captured with a Core Audio process tap, as raw PCM on stdout.
//
// Sotto (core/audio/macos_tap.py) starts this program and reads what it writes. Wire format 1:
//   one ASCII header line   "SOTTO-TAP 1 rate=<Hz> channels=<n> format=f32le\n"
//   then interleaved little-endian 32-bit float frames at that rate, until the program ends.
// It ends, removing its tap and aggregate device, on SIGTERM, SIGINT or SIGHUP, when stdin reaches
// its end (so it never outlives Sotto), or when stdout is closed. The exit code says why, and any
// code but 0 comes with one line on stderr:
//   0 stopped on request        2 bad arguments               3 macOS older than 14.2
//   4 no permission to record the system audio (System Audio Recording)
//   5 no output device          6 a Core Audio call failed    7 the tap's format is not 32-bit float
//   8 the default output or the tap's format changed (start again to follow it)
//
// The tap is global (every process's output, mixed to stereo), private to this process and unmuted
// (the user still hears everything). It feeds a private aggregate device that has no other
// sub-device, so the tap alone clocks it; an IO block copies each buffer into a ring that a writer
// thread drains to stdout, so a slow reader never blocks the audio thread (the oldest audio is
// dropped instead, and counted).
//
// Built by packaging/macos/build-audiotap.sh (deployment target below 14.2, so that on an older
// macOS it runs and says so with exit code 3).

import AudioToolbox
import CoreAudio
import Darwin
import Foundation
import os

let programName = "sotto-audiotap"
let wireVersion = 1

enum ExitCode: Int32 {
    case stopped = 0
    case usage = 2
    case unsupportedOS = 3
    case permissionDenied = 4
    case noOutputDevice = 5
    case coreAudioFailed = 6
    case unsupportedFormat = 7
    case outputChanged = 8
}

struct Failure: Error {
    let code: ExitCode
    let message: String
}

func say(_ message: String) {
    let line = "\(programName): \(message)\n"
    let bytes = Array(line.utf8)
    _ = bytes.withUnsafeBytes { writeAll(STDERR_FILENO, $0.baseAddress!, $0.count) }
}

func quit(_ code: ExitCode, _ message: String) -> Never {
    if !message.isEmpty { say(message) }
    exit(code.rawValue)
}

/// Writes all ``count`` bytes to ``fd``; false once the other end is gone (EPIPE) or on another error.
@discardableResult
func writeAll(_ fd: Int32, _ base: UnsafeRawPointer, _ count: Int) -> Bool {
    var offset = 0
    while offset < count {
        let written = Darwin.write(fd, base + offset, count - offset)
        if written < 0 {
            if errno == EINTR { continue }
            return false
        }
        offset += written
    }
    return true
}

func fourCC(_ status: OSStatus) -> String {
    let value = UInt32(bitPattern: status)
    let bytes = [24, 16, 8, 0].map { UInt8((value >> UInt32($0)) & 0xFF) }
    if bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) {
        return "'\(String(decoding: bytes, as: UTF8.self))' (\(status))"
    }
    return "\(status)"
}

func address(_ selector: AudioObjectPropertySelector) -> AudioObjectPropertyAddress {
    AudioObjectPropertyAddress(mSelector: selector, mScope: kAudioObjectPropertyScopeGlobal,
                               mElement: kAudioObjectPropertyElementMain)
}

let systemObject = AudioObjectID(kAudioObjectSystemObject)
let unknownObject = AudioObjectID(kAudioObjectUnknown)

// MARK: - The end of the run

/// The first reason to end wins; the main thread waits for it.
final class Ending {
    private let lock = NSLock()
    private let signalled = DispatchSemaphore(value: 0)
    private var reason: (ExitCode, String)?

    func end(_ code: ExitCode, _ message: String) {
        lock.lock()
        let first = reason == nil
        if first { reason = (code, message) }
        lock.unlock()
        if first { signalled.signal() }
    }

    var ended: Bool {
        lock.lock()
        defer { lock.unlock() }
        return reason != nil
    }

    func wait() -> (ExitCode, String) {
        signalled.wait()
        lock.lock()
        defer { lock.unlock() }
        return reason ?? (.stopped, "")
    }
}

// MARK: - The ring between the IO block and the writer thread

/// A preallocated byte FIFO of whole frames. ``push`` (IO block) never blocks on the pipe and never
/// allocates; when the writer falls behind by more than the capacity the oldest frames are dropped.
final class FrameRing {
    private let storage: UnsafeMutablePointer<UInt8>
    private let capacity: Int
    private let frameBytes: Int
    private var start = 0
    private var count = 0
    private let lock: UnsafeMutablePointer<os_unfair_lock>  // allocated: a lock needs a stable address
    private var sound = false
    private(set) var droppedFrames = 0
    let wake = DispatchSemaphore(value: 0)

    init(frames: Int, frameBytes: Int) {
        self.frameBytes = frameBytes
        capacity = frames * frameBytes
        storage = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
        lock = UnsafeMutablePointer<os_unfair_lock>.allocate(capacity: 1)
        lock.initialize(to: os_unfair_lock())
    }

    deinit {
        storage.deallocate()
        lock.deallocate()
    }

    /// True once any sample that is not exactly zero went through (a denied permission gives zeros).
    var heardSound: Bool {
        os_unfair_lock_lock(lock)
        defer { os_unfair_lock_unlock(lock) }
        return sound
    }

    func push(_ source: UnsafeRawPointer, _ byteCount: Int) {
        var bytes = byteCount - byteCount % frameBytes
        var from = source
        if bytes <= 0 { return }
        var nonZero = false
        if !sound {
            let samples = from.assumingMemoryBound(to: Float32.self)
            for index in 0..<(bytes / 4) where samples[index] != 0 {
                nonZero = true
                break
            }
        }
        os_unfair_lock_lock(lock)
        if nonZero { sound = true }
        if bytes > capacity {  // keep the newest capacity's worth
            droppedFrames += (bytes - capacity) / frameBytes
            from += bytes - capacity
            bytes = capacity
        }
        let free = capacity - count
        if bytes > free {
            let drop = bytes - free
            start = (start + drop) % capacity
            count -= drop
            droppedFrames += drop / frameBytes
        }
        var end = (start + count) % capacity
        var left = bytes
        while left > 0 {
            let run = min(left, capacity - end)
            (storage + end).update(from: from.assumingMemoryBound(to: UInt8.self), count: run)
            from += run
            left -= run
            end = (end + run) % capacity
        }
        count += bytes
        os_unfair_lock_unlock(lock)
        wake.signal()
    }

    /// Moves up to ``maxBytes`` (a multiple of the frame size) into ``buffer``; the number moved.
    func pop(into buffer: UnsafeMutablePointer<UInt8>, maxBytes: Int) -> Int {
        os_unfair_lock_lock(lock)
        defer { os_unfair_lock_unlock(lock) }
        let bytes = min(count, maxBytes)
        var done = 0
        while done < bytes {
            let run = min(bytes - done, capacity - start)
            (buffer + done).update(from: storage + start, count: run)
            done += run
            start = (start + run) % capacity
        }
        count -= bytes
        return bytes
    }
}

// MARK: - Permission

enum Permission { case authorized, denied, unknown }

/// The System Audio Recording permission as TCC reports it, where it can be asked. Apple offers no
/// public call for this (a denied tap simply delivers silence), so this uses TCC's preflight call
/// if present and says ``unknown`` otherwise; the caller only trusts ``denied`` once the tap has
/// delivered nothing but zeros.
func audioCapturePermission() -> Permission {
    guard let tcc = dlopen("/System/Library/PrivateFrameworks/TCC.framework/Versions/A/TCC", RTLD_NOW) else {
        return .unknown
    }
    defer { dlclose(tcc) }
    guard let symbol = dlsym(tcc, "TCCAccessPreflight") else { return .unknown }
    typealias Preflight = @convention(c) (CFString, CFDictionary?) -> Int
    let preflight = unsafeBitCast(symbol, to: Preflight.self)
    switch preflight("kTCCServiceAudioCapture" as CFString, nil) {
    case 0: return .authorized
    case 1: return .denied
    default: return .unknown
    }
}

// MARK: - Core Audio

func defaultOutputDevice() -> AudioObjectID {
    var where_ = address(kAudioHardwarePropertyDefaultOutputDevice)
    var device = unknownObject
    var size = UInt32(MemoryLayout<AudioObjectID>.size)
    let status = AudioObjectGetPropertyData(systemObject, &where_, 0, nil, &size, &device)
    return status == noErr ? device : unknownObject
}

func nominalSampleRate(_ device: AudioObjectID) -> Float64 {
    var where_ = address(kAudioDevicePropertyNominalSampleRate)
    var rate: Float64 = 0
    var size = UInt32(MemoryLayout<Float64>.size)
    let status = AudioObjectGetPropertyData(device, &where_, 0, nil, &size, &rate)
    return status == noErr ? rate : 0
}

@available(macOS 14.2, *)
func processObject(pid: pid_t) -> AudioObjectID? {
    var where_ = address(kAudioHardwarePropertyTranslatePIDToProcessObject)
    var qualifier = pid
    var object = unknownObject
    var size = UInt32(MemoryLayout<AudioObjectID>.size)
    let status = AudioObjectGetPropertyData(systemObject, &where_, UInt32(MemoryLayout<pid_t>.size), &qualifier,
                                            &size, &object)
    return status == noErr && object != unknownObject ? object : nil
}

@available(macOS 14.2, *)
func tapFormat(_ tap: AudioObjectID) -> AudioStreamBasicDescription? {
    var where_ = address(kAudioTapPropertyFormat)
    var format = AudioStreamBasicDescription()
    var size = UInt32(MemoryLayout<AudioStreamBasicDescription>.size)
    let status = AudioObjectGetPropertyData(tap, &where_, 0, nil, &size, &format)
    return status == noErr ? format : nil
}

/// A global process tap inside a private aggregate device, and the IO block reading it.
@available(macOS 14.2, *)
final class SystemTap {
    private var tapID = unknownObject
    private var aggregateID = unknownObject
    private var procID: AudioDeviceIOProcID?
    private var scratch: UnsafeMutablePointer<Float32>?
    private let scratchFrames = 8192
    private let ioQueue = DispatchQueue(label: "sotto-audiotap.io", qos: .userInteractive)
    private(set) var rate: Float64 = 0
    private(set) var channels = 0
    private var listeners: [(AudioObjectID, AudioObjectPropertyAddress, AudioObjectPropertyListenerBlock)] = []

    /// Creates the tap (all processes but ``excluded``) and its aggregate device; reads the format.
    func create(excluding excluded: [AudioObjectID]) throws {
        let description = CATapDescription(stereoGlobalTapButExcludeProcesses: excluded)
        description.name = "Sotto system audio"
        description.uuid = UUID()
        description.isPrivate = true
        description.muteBehavior = .unmuted
        var status = AudioHardwareCreateProcessTap(description, &tapID)
        guard status == noErr, tapID != unknownObject else {
            tapID = unknownObject
            throw Failure(code: .coreAudioFailed, message: "could not create the process tap (\(fourCC(status)))")
        }
        guard let format = tapFormat(tapID) else {
            throw Failure(code: .coreAudioFailed, message: "could not read the tap's audio format")
        }
        let isFloat = format.mFormatFlags & kAudioFormatFlagIsFloat != 0
        guard format.mFormatID == kAudioFormatLinearPCM, isFloat, format.mBitsPerChannel == 32,
              format.mChannelsPerFrame > 0, format.mSampleRate > 0 else {
            throw Failure(code: .unsupportedFormat,
                          message: "the tap delivers an unsupported format (\(format.mBitsPerChannel)-bit, "
                              + "flags \(format.mFormatFlags), \(format.mChannelsPerFrame) channels)")
        }
        channels = Int(format.mChannelsPerFrame)

        let composition: [String: Any] = [
            kAudioAggregateDeviceNameKey: "Sotto system audio",
            kAudioAggregateDeviceUIDKey: "org.sotto.audiotap.\(UUID().uuidString)",
            kAudioAggregateDeviceIsPrivateKey: true,
            kAudioAggregateDeviceIsStackedKey: false,
            kAudioAggregateDeviceTapAutoStartKey: true,
            kAudioAggregateDeviceSubDeviceListKey: [] as [Any],
            kAudioAggregateDeviceTapListKey: [
                [kAudioSubTapUIDKey: description.uuid.uuidString, kAudioSubTapDriftCompensationKey: true]
                    as [String: Any],
            ],
        ]
        status = AudioHardwareCreateAggregateDevice(composition as CFDictionary, &aggregateID)
        guard status == noErr, aggregateID != unknownObject else {
            aggregateID = unknownObject
            throw Failure(code: .coreAudioFailed, message: "could not create the aggregate device (\(fourCC(status)))")
        }

        // A tap-only aggregate may come up at another rate than the tap's: ask for the tap's, then
        // announce the rate the device actually runs at (that is the rate the IO block gets).
        rate = nominalSampleRate(aggregateID)
        if rate != format.mSampleRate {
            var where_ = address(kAudioDevicePropertyNominalSampleRate)
            var wanted = format.mSampleRate
            let set = AudioObjectSetPropertyData(aggregateID, &where_, 0, nil, UInt32(MemoryLayout<Float64>.size),
                                                 &wanted)
            var waited = 0
            while set == noErr, nominalSampleRate(aggregateID) != wanted, waited < 50 {
                usleep(10_000)  // property changes are asynchronous: give it up to half a second
                waited += 1
            }
            rate = nominalSampleRate(aggregateID)
        }
        if rate <= 0 { rate = format.mSampleRate }
        scratch = UnsafeMutablePointer<Float32>.allocate(capacity: scratchFrames * channels)
    }

    /// Starts the IO block, which hands every buffer to ``ring`` as interleaved frames.
    func start(into ring: FrameRing) throws {
        let channels = self.channels
        let scratch = self.scratch!
        let scratchFrames = self.scratchFrames
        var status = AudioDeviceCreateIOProcIDWithBlock(&procID, aggregateID, ioQueue) { _, input, _, _, _ in
            let buffers = UnsafeMutableAudioBufferListPointer(UnsafeMutablePointer(mutating: input))
            // one interleaved buffer (the usual case) ...
            if let whole = buffers.first(where: { Int($0.mNumberChannels) == channels }), let data = whole.mData {
                ring.push(data, Int(whole.mDataByteSize))
                return
            }
            // ... or one buffer per channel, interleaved here
            guard buffers.count >= channels else { return }
            var frames = Int.max
            for channel in 0..<channels {  // no allocation in the IO block
                let plane = buffers[channel]
                guard plane.mNumberChannels == 1, plane.mData != nil else { return }
                frames = min(frames, Int(plane.mDataByteSize) / 4)
            }
            var done = 0
            while done < frames {
                let run = min(scratchFrames, frames - done)
                for channel in 0..<channels {
                    let plane = buffers[channel].mData!.assumingMemoryBound(to: Float32.self)
                    for frame in 0..<run {
                        scratch[frame * channels + channel] = plane[done + frame]
                    }
                }
                ring.push(UnsafeRawPointer(scratch), run * channels * 4)
                done += run
            }
        }
        guard status == noErr, procID != nil else {
            throw Failure(code: .coreAudioFailed, message: "could not create the IO block (\(fourCC(status)))")
        }
        status = AudioDeviceStart(aggregateID, procID)
        guard status == noErr else {
            throw Failure(code: .coreAudioFailed, message: "could not start the aggregate device (\(fourCC(status)))")
        }
    }

    /// Ends the run with code 8 when the default output changes or the tap's format stops matching.
    func watchForChanges(_ ending: Ending, queue: DispatchQueue) {
        let rate = self.rate, channels = self.channels, tapID = self.tapID
        let outputChanged: AudioObjectPropertyListenerBlock = { _, _ in
            ending.end(.outputChanged, "the default output changed")
        }
        let formatChanged: AudioObjectPropertyListenerBlock = { _, _ in
            guard let format = tapFormat(tapID) else { return }
            if format.mSampleRate != rate || Int(format.mChannelsPerFrame) != channels {
                ending.end(.outputChanged, "the tap's format changed to \(Int(format.mSampleRate)) Hz, "
                    + "\(format.mChannelsPerFrame) channels")
            }
        }
        let watched: [(AudioObjectID, AudioObjectPropertySelector, AudioObjectPropertyListenerBlock)] = [
            (systemObject, kAudioHardwarePropertyDefaultOutputDevice, outputChanged),
            (tapID, kAudioTapPropertyFormat, formatChanged),
        ]
        for (object, selector, block) in watched {
            var where_ = address(selector)
            if AudioObjectAddPropertyListenerBlock(object, &where_, queue, block) == noErr {
                listeners.append((object, where_, block))
            }
        }
    }

    /// Stops the IO and removes everything this run created, newest first (safe after a partial setup).
    func teardown(queue: DispatchQueue) {
        for (object, where_, block) in listeners {
            var where_ = where_
            AudioObjectRemovePropertyListenerBlock(object, &where_, queue, block)
        }
        listeners.removeAll()
        if aggregateID != unknownObject {
            if let procID {
                AudioDeviceStop(aggregateID, procID)
                AudioDeviceDestroyIOProcID(aggregateID, procID)
                self.procID = nil
            }
            AudioHardwareDestroyAggregateDevice(aggregateID)
            aggregateID = unknownObject
        }
        if tapID != unknownObject {
            AudioHardwareDestroyProcessTap(tapID)
            tapID = unknownObject
        }
    }
}

// MARK: - The program

struct Options {
    var excludedPIDs: [pid_t] = []
}

let usage = """
    usage: \(programName) [--exclude-pid PID]...
    Writes what this Mac plays (a Core Audio process tap of all processes, macOS 14.2 or newer) to stdout:
    the line "SOTTO-TAP \(wireVersion) rate=HZ channels=N format=f32le", then raw float32 frames.
    Ends on SIGTERM/SIGINT or when stdin closes.
    """

func parseArguments() -> Options {
    var options = Options()
    var args = CommandLine.arguments.dropFirst()
    while let arg = args.popFirst() {
        switch arg {
        case "--exclude-pid":
            guard let value = args.popFirst(), let pid = pid_t(value), pid > 0 else {
                quit(.usage, "--exclude-pid needs a process id")
            }
            options.excludedPIDs.append(pid)
        case "--version":
            print("\(programName) \(wireVersion)")
            exit(ExitCode.stopped.rawValue)
        case "-h", "--help":
            print(usage)
            exit(ExitCode.stopped.rawValue)
        default:
            quit(.usage, "unknown argument \(arg) (see --help)")
        }
    }
    return options
}

/// Ends the run when stdin reaches its end: Sotto closes it (or dies) and the helper must go too.
func watchStdin(_ ending: Ending) {
    let thread = Thread {
        var buffer = [UInt8](repeating: 0, count: 256)
        while true {
            let got = buffer.withUnsafeMutableBytes { Darwin.read(STDIN_FILENO, $0.baseAddress, $0.count) }
            if got == 0 || (got < 0 && errno != EINTR) {
                ending.end(.stopped, "")
                return
            }
        }
    }
    thread.name = "stdin"
    thread.start()
}

/// Drains the ring to stdout until the run ends; the reader going away ends the run quietly.
func startWriter(_ ring: FrameRing, frameBytes: Int, ending: Ending) {
    let thread = Thread {
        let chunk = max(frameBytes, (64 * 1024 / frameBytes) * frameBytes)
        let buffer = UnsafeMutablePointer<UInt8>.allocate(capacity: chunk)
        while !ending.ended {
            _ = ring.wake.wait(timeout: .now() + .milliseconds(200))
            while true {
                let bytes = ring.pop(into: buffer, maxBytes: chunk)
                if bytes == 0 { break }
                if !writeAll(STDOUT_FILENO, buffer, bytes) {
                    ending.end(.stopped, "")
                    return
                }
            }
        }
    }
    thread.name = "writer"
    thread.qualityOfService = .userInteractive
    thread.start()
}

func run() -> Never {
    let options = parseArguments()
    signal(SIGPIPE, SIG_IGN)  // a closed stdout is a write error, not a silent death
    guard #available(macOS 14.2, *) else {
        quit(.unsupportedOS, "capturing system audio needs macOS 14.2 or newer")
    }
    if defaultOutputDevice() == unknownObject {
        quit(.noOutputDevice, "there is no audio output device")
    }
    let permission = audioCapturePermission()

    let ending = Ending()
    let control = DispatchQueue(label: "sotto-audiotap.control")
    var signalSources: [DispatchSourceSignal] = []
    for sig in [SIGTERM, SIGINT, SIGHUP] {
        signal(sig, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: sig, queue: control)
        source.setEventHandler { ending.end(.stopped, "") }
        source.resume()
        signalSources.append(source)
    }

    let excluded = options.excludedPIDs.compactMap { pid -> AudioObjectID? in
        let object = processObject(pid: pid)
        if object == nil { say("process \(pid) has no audio object; not excluded") }
        return object
    }
    let tap = SystemTap()
    let ring: FrameRing
    do {
        try tap.create(excluding: excluded)
        let frameBytes = tap.channels * 4
        ring = FrameRing(frames: Int(tap.rate) * 4, frameBytes: frameBytes)  // 4 s
        try tap.start(into: ring)
    } catch let failure as Failure {
        tap.teardown(queue: control)
        quit(failure.code, failure.message)
    } catch {
        tap.teardown(queue: control)
        quit(.coreAudioFailed, "\(error)")
    }

    if permission == .denied {
        // TCC says no: a denied tap runs but delivers exact zeros. Wait up to 2 s for any sound
        // before believing it (something may simply be silent, or TCC asked about another process).
        let deadline = Date().addingTimeInterval(2.0)
        while !ring.heardSound, Date() < deadline, !ending.ended { usleep(20_000) }
        if !ring.heardSound && !ending.ended {
            tap.teardown(queue: control)
            quit(.permissionDenied, "no permission to record the system audio (System Audio Recording)")
        }
    }

    let header = "SOTTO-TAP \(wireVersion) rate=\(Int(tap.rate.rounded())) channels=\(tap.channels) format=f32le\n"
    let headerBytes = Array(header.utf8)
    let sent = headerBytes.withUnsafeBytes { writeAll(STDOUT_FILENO, $0.baseAddress!, $0.count) }
    if !sent {
        tap.teardown(queue: control)
        quit(.stopped, "")
    }
    startWriter(ring, frameBytes: tap.channels * 4, ending: ending)
    watchStdin(ending)
    tap.watchForChanges(ending, queue: control)

    let (code, message) = ending.wait()
    tap.teardown(queue: control)
    if ring.droppedFrames > 0 {
        say("dropped \(ring.droppedFrames) frames the reader did not take in time")
    }
    _ = signalSources
    quit(code, message)
}

run()
