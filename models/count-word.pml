/*
 * SPDX-License-Identifier: GPL-2.0
 *
 * What the count designs share: legacy, and count-only, which extends it
 * (variants/count-only/extends) and keeps its owner hint and spinning.
 * Included by their models after they define osq, owner_hint and the
 * inline trylock().
 */

inline set_owner_hint()
{
	atomic {
		owner_hint = _pid + 1;
		MEM;
		STEP("mutex_set_owner: lock->owner = current")
	}
}

/*
 * mutex_optimistic_spin(): on the OSQ, spin while the owner (hint) runs,
 * keep trying with no owner recorded; the scheduler decides when to give up.
 */
inline spin_on_owner()
{
	if
	:: atomic {
		osq == 0 -> osq = 1;
		MEM;
		STEP("mutex_optimistic_spin: osq_lock(&lock->osq)")
	   }
		do
		:: trylock();
			if
			:: r -> break
			:: else -> skip
			fi;
			atomic {
				MEM;
				STEP("mutex_optimistic_spin: __mutex_owner(lock)")
			}
			if
			:: skip		/* owner runs, or none recorded */
			:: break	/* owner not on a CPU, or need_resched() */
			fi
		od;
		atomic {
			osq = 0;
			MEM;
			STEP("mutex_optimistic_spin: osq_unlock(&lock->osq)")
		}
	:: STEP("mutex_optimistic_spin: no spinning (mutex_can_spin_on_owner)")
	fi
}
