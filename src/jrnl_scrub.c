// SPDX-License-Identifier: GPL-2.0-or-later
/*
 * Scrubbing the journal of a mounted file system: read it back from the
 * device as the next mount would, and rewrite it when it does not hold.
 *
 * The read-back is jrnl_open() itself, read-only, into a throw-away copy
 * of the metadata: the superblocks, the anchors, every copy of the chain,
 * each checked by the validator the mount and fsck use. Nothing of the
 * live journal is trusted to say what is on the device.
 *
 * It runs as the committer, so that the chain, the anchors and the super
 * zones do not change under it: commits wait while it reads (the metadata
 * of a file system, up to a few MiB per copy; docs/usage.md has what it
 * costs). Data writes go on.
 *
 * Why a roll repairs anything it finds: the metadata in memory is the
 * truth the journal records (it was checked at mount, and every change
 * since went through zm_apply()), so a new chain headed by a snapshot of
 * it, in both copies, and a new anchor in each super zone, leave nothing
 * on the device that the next mount needs from the damaged blocks. That
 * holds even for damage in both copies, which an unmounted repair cannot
 * undo: found while mounted, it costs nothing.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "jrnl_i.h"
#include "zonefuse/util.h"

/*
 * Read the journal back into a throw-away zmeta and note in @r what does
 * not hold. @live is the journal being scrubbed (its committer is us);
 * with @switches, how many super zone switches a rewrite must make to
 * rewrite what was found damaged there (jrnl_find_anchor()'s rule, from
 * the read-back's view of which zone is live).
 */
static int jrnl_scrub_read(struct jrnl *live, struct jrnl_scrub_pass *p,
			   uint32_t *switches)
{
	struct jrnl_replay_info *info = &p->info;
	struct zmeta m;
	struct zf_super sb;
	struct jrnl *j;
	int ret;

	ret = jrnl_open(live->dev, JRNL_RDONLY, &m, &j, &sb, info, p->err,
			sizeof(p->err));
	if (ret == -ENOMEM)
		return ret;
	if (ret) {
		/*
		 * Damage the read-back cannot get past (both superblocks, say):
		 * the next mount's refusal. Which super zone holds what is not
		 * known, so a rewrite rewrites both.
		 */
		p->read_err = ret;
		p->damage = true;
		if (switches)
			*switches = 2;
		return 0;
	}
	if (switches)
		*switches = j->sz_cur == live->sz_cur ?
				    j->sz_switches :
				    (j->sz_switches ? 2 : 0);
	jrnl_free(j);
	zm_destroy(&m);
	p->short_log = info->last_seq < p->durable_seq;
	p->damage = info->super_damaged || info->anchor_damaged ||
		    info->super_unwritable || info->copy_damaged ||
		    info->damaged || p->short_log;
	return 0;
}

int jrnl_scrub(struct jrnl *j, bool repair, struct jrnl_scrub *r)
{
	bool failed = false;
	uint32_t switches = 0;
	int ret, err;

	memset(r, 0, sizeof(*r));
	pthread_mutex_lock(&j->lock);
	while (j->busy)
		pthread_cond_wait(&j->cv, &j->lock);
	j->busy = true;
	r->pass[0].durable_seq = j->durable_seq;
	err = j->error;
	pthread_mutex_unlock(&j->lock);

	ret = jrnl_scrub_read(j, &r->pass[0], &switches);
	if (ret || !r->pass[0].damage)
		goto out_idle;
	if (err || j->rdonly || !repair) {
		r->rewrite_err = err ? err : -EROFS;
		goto out_idle;
	}
	if (switches > j->sz_switches)
		j->sz_switches = switches;
	r->rewrite_err = jrnl_do_roll(j);
	jrnl_set_grow(j);
	if (r->rewrite_err) {
		/* As a failed roll of a commit: the pending records are gone. */
		pthread_mutex_lock(&j->lock);
		if (!j->error)
			failed = jrnl_set_error(j, r->rewrite_err, "rewriting the metadata (scrub)");
		pthread_mutex_unlock(&j->lock);
		goto out_idle;
	}
	j->need_roll = false;
	r->rewritten = true;
	pthread_mutex_lock(&j->lock);
	r->pass[1].durable_seq = j->durable_seq;
	pthread_mutex_unlock(&j->lock);
	ret = jrnl_scrub_read(j, &r->pass[1], NULL);

out_idle:
	pthread_mutex_lock(&j->lock);
	j->busy = false;
	pthread_cond_broadcast(&j->cv);
	pthread_mutex_unlock(&j->lock);
	if (failed)
		j->cb->failed(j->cb_arg, r->rewrite_err);
	return ret;
}
