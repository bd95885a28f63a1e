/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What crosses from the guest to the host: the harness's exit codes, its
 * marks on /dev/kmsg and the default time limit. The host's side is
 * scripts/krepro/protocol.py, the init's lines are guest-image/init's;
 * tests/test_protocol.py checks that they agree.
 */
#ifndef KREPRO_PROTOCOL_H
#define KREPRO_PROTOCOL_H

/*
 * A reproducer's exit status, which the init passes on as
 * "krepro-init: result name=X exit=N": the host's outcome of the run.
 */
enum krepro_verdict {
	KREPRO_PASS = 0,
	KREPRO_FAIL = 1,
	KREPRO_BROKEN = 2,
	KREPRO_SKIP = 4,
};

/*
 * Seconds for a whole run when struct krepro_test declares no timeout; the
 * host allows its own margin on top for the boot and the power-off.
 */
#define KREPRO_DEFAULT_TIMEOUT 60

/*
 * The harness's marks on /dev/kmsg (printf formats of the reproducer's
 * name): the host reads a kernel report before the start mark as the
 * kernel being unwell before the test.
 */
#define KREPRO_MARK_START "krepro: %s: start\n"
#define KREPRO_MARK_END "krepro: %s: end %s\n"

#endif
