// thread_annotations.h — the attributes of Clang's thread-safety analysis
// (https://clang.llvm.org/docs/ThreadSafetyAnalysis.html): which mutex guards a member, which
// functions need it held and which take it. Clang checks them with -Wthread-safety (the `clang`
// preset, an error there); on other compilers the macros expand to nothing.
//
// Internal (not installed): for the in-tree libraries and their tests, with core/mutex.h.
#ifndef CLAWGUARD_CORE_THREAD_ANNOTATIONS_H_
#define CLAWGUARD_CORE_THREAD_ANNOTATIONS_H_

#if defined(__clang__)
#define CLAWGUARD_THREAD_ANNOTATION_(x) __attribute__((x))
#else
#define CLAWGUARD_THREAD_ANNOTATION_(x)
#endif

// CLAWGUARD_CAPABILITY(name) marks a class as a lock ("mutex").
#define CLAWGUARD_CAPABILITY(name) CLAWGUARD_THREAD_ANNOTATION_(capability(name))
// CLAWGUARD_SCOPED_CAPABILITY marks an RAII class that holds a lock for its lifetime.
#define CLAWGUARD_SCOPED_CAPABILITY CLAWGUARD_THREAD_ANNOTATION_(scoped_lockable)

// CLAWGUARD_GUARDED_BY(mu): the member is read and written only with |mu| held.
#define CLAWGUARD_GUARDED_BY(mu) CLAWGUARD_THREAD_ANNOTATION_(guarded_by(mu))
// CLAWGUARD_PT_GUARDED_BY(mu): what the pointer member points at is guarded by |mu| (the
// pointer itself is not).
#define CLAWGUARD_PT_GUARDED_BY(mu) CLAWGUARD_THREAD_ANNOTATION_(pt_guarded_by(mu))

// CLAWGUARD_REQUIRES(mu...): the caller holds |mu| exclusively.
#define CLAWGUARD_REQUIRES(...) CLAWGUARD_THREAD_ANNOTATION_(requires_capability(__VA_ARGS__))
// CLAWGUARD_REQUIRES_SHARED(mu...): the caller holds |mu| at least shared.
#define CLAWGUARD_REQUIRES_SHARED(...) \
  CLAWGUARD_THREAD_ANNOTATION_(requires_shared_capability(__VA_ARGS__))
// CLAWGUARD_EXCLUDES(mu...): the caller does not hold |mu| (the function takes it).
#define CLAWGUARD_EXCLUDES(...) CLAWGUARD_THREAD_ANNOTATION_(locks_excluded(__VA_ARGS__))

// CLAWGUARD_ACQUIRE / CLAWGUARD_RELEASE: the function takes / gives back the lock (|this| when
// no argument is named); the _SHARED forms for a reader's lock.
#define CLAWGUARD_ACQUIRE(...) CLAWGUARD_THREAD_ANNOTATION_(acquire_capability(__VA_ARGS__))
#define CLAWGUARD_ACQUIRE_SHARED(...) \
  CLAWGUARD_THREAD_ANNOTATION_(acquire_shared_capability(__VA_ARGS__))
#define CLAWGUARD_RELEASE(...) CLAWGUARD_THREAD_ANNOTATION_(release_capability(__VA_ARGS__))
#define CLAWGUARD_RELEASE_SHARED(...) \
  CLAWGUARD_THREAD_ANNOTATION_(release_shared_capability(__VA_ARGS__))
// CLAWGUARD_TRY_ACQUIRE(ok, mu...): the function takes the lock when it returns |ok|.
#define CLAWGUARD_TRY_ACQUIRE(...) CLAWGUARD_THREAD_ANNOTATION_(try_acquire_capability(__VA_ARGS__))
// CLAWGUARD_ASSERT_CAPABILITY(mu): the function checks that |mu| is held; the analysis assumes
// it is from then on.
#define CLAWGUARD_ASSERT_CAPABILITY(mu) CLAWGUARD_THREAD_ANNOTATION_(assert_capability(mu))

// CLAWGUARD_NO_THREAD_SAFETY_ANALYSIS turns the analysis off for one function. Every use says
// on the line above why the analysis cannot follow it.
#define CLAWGUARD_NO_THREAD_SAFETY_ANALYSIS CLAWGUARD_THREAD_ANNOTATION_(no_thread_safety_analysis)

#endif  // CLAWGUARD_CORE_THREAD_ANNOTATIONS_H_
